package ami

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/version"
	testclock "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	localssm "github.com/dovetail-autoscaler/dovetail/internal/localaws/ssm"
)

// serverVersion is the API server's /version.
type serverVersion struct{ major, minor string }

func (v serverVersion) ServerVersion() (*version.Info, error) {
	return &version.Info{Major: v.major, Minor: v.minor}, nil
}

type localAWS struct {
	ec2 *localec2.Service
	ssm *localssm.Service
	clk *testclock.FakeClock
	p   *Provider
}

func newLocalAWS(t *testing.T, minor string) *localAWS {
	t.Helper()
	clk := testclock.NewFakeClock(now)
	e := &localAWS{ec2: localec2.New(localec2.Config{Clock: clk, Seed: 1}), ssm: localssm.New(localssm.Config{Clock: clk}), clk: clk}
	ec2srv, ssmsrv := httptest.NewServer(e.ec2), httptest.NewServer(e.ssm)
	t.Cleanup(ec2srv.Close)
	t.Cleanup(ssmsrv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")
	ec2client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(ec2srv.URL), Credentials: creds, Retryer: aws.NopRetryer{}})
	ssmclient := ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(ssmsrv.URL), Credentials: creds, Retryer: aws.NopRetryer{}})
	e.p = NewProvider(ec2client, ssmclient, serverVersion{"1", minor}, clk)
	return e
}

func (e *localAWS) image(t *testing.T, name, arch string, created time.Time) string {
	t.Helper()
	img, err := e.ec2.AddImage(localec2.Image{Name: name, Architecture: arch, CreationDate: created, OwnerAlias: "amazon", OwnerID: "137112412989", Public: true})
	if err != nil {
		t.Fatal(err)
	}
	return img.ID
}

func nodeClass(terms ...v1.AMISelectorTerm) *v1.EC2NodeClass {
	return &v1.EC2NodeClass{Spec: v1.EC2NodeClassSpec{AMISelectorTerms: terms}}
}

// summary is what a status.amis entry says, compactly.
func summary(amis []v1.AMI) []string {
	var out []string
	for _, a := range amis {
		s := a.ID
		for _, r := range a.Requirements {
			s += " " + r.Key + ":" + string(r.Operator)
			for _, v := range r.Values {
				s += ":" + v
			}
		}
		out = append(out, s)
	}
	return out
}

func TestAliasAgainstLocalAWS(t *testing.T) {
	// The API server says 1.33+, as some distributions do.
	e := newLocalAWS(t, "33+")
	const base = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023"
	x86 := e.image(t, "al2023-x86_64-standard", "x86_64", now.Add(-2*time.Hour))
	arm := e.image(t, "al2023-arm64-standard", "arm64", now.Add(-3*time.Hour))
	nvidia := e.image(t, "al2023-x86_64-nvidia", "x86_64", now.Add(-time.Hour))
	e.ssm.PutParameter(base+"/x86_64/standard/recommended/image_id", x86)
	e.ssm.PutParameter(base+"/arm64/standard/recommended/image_id", arm)
	e.ssm.PutParameter(base+"/x86_64/nvidia/recommended/image_id", nvidia)
	// neuron and arm64 nvidia are not published: skipped.

	amis, err := e.p.List(context.Background(), nodeClass(v1.AMISelectorTerm{Alias: "al2023@latest"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		nvidia + " kubernetes.io/arch:In:amd64 karpenter.k8s.aws/instance-gpu-count:Exists",
		x86 + " kubernetes.io/arch:In:amd64 karpenter.k8s.aws/instance-gpu-count:DoesNotExist karpenter.k8s.aws/instance-accelerator-count:DoesNotExist",
		arm + " kubernetes.io/arch:In:arm64 karpenter.k8s.aws/instance-gpu-count:DoesNotExist karpenter.k8s.aws/instance-accelerator-count:DoesNotExist",
	}
	if diff := cmp.Diff(want, summary(amis)); diff != "" {
		t.Errorf("List() mismatch (-want +got):\n%s", diff)
	}

	t.Run("no parameter for the alias", func(t *testing.T) {
		_, err := e.p.List(context.Background(), nodeClass(v1.AMISelectorTerm{Alias: "bottlerocket@latest"}))
		if !IsNotFound(err) {
			t.Fatalf("error %v is not a NotFoundError", err)
		}
		if want := `spec.amiSelectorTerms[0].alias: failed to discover any AMIs for alias "bottlerocket@latest" (Kubernetes 1.33)`; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	})
	t.Run("al2 on 1.33", func(t *testing.T) {
		if _, err := e.p.List(context.Background(), nodeClass(v1.AMISelectorTerm{Alias: "al2@latest"})); !IsUnsupportedAlias(err) {
			t.Fatalf("error %v is not an UnsupportedAliasError", err)
		}
	})
}

func TestTermsAgainstLocalAWS(t *testing.T) {
	e := newLocalAWS(t, "33")
	old := e.image(t, "custom-1", "x86_64", now.Add(-48*time.Hour))
	newer := e.image(t, "custom-2", "x86_64", now.Add(-24*time.Hour))
	arm := e.image(t, "custom-arm", "arm64", now.Add(-72*time.Hour))
	e.ssm.PutParameter("/team/ami", old)
	ctx := context.Background()
	cases := map[string]struct {
		nc   *v1.EC2NodeClass
		want []string
	}{
		"name wildcard: newest per arch": {nc: nodeClass(v1.AMISelectorTerm{Name: "custom-*", Owner: "137112412989"}), want: []string{
			newer + " kubernetes.io/arch:In:amd64", arm + " kubernetes.io/arch:In:arm64"}},
		"ssm parameter": {nc: nodeClass(v1.AMISelectorTerm{SSMParameter: "/team/ami"}), want: []string{old + " kubernetes.io/arch:In:amd64"}},
		"id, windows family adds os and build": {
			nc:   &v1.EC2NodeClass{Spec: v1.EC2NodeClassSpec{AMIFamily: aws.String(v1.AMIFamilyWindows2022), AMISelectorTerms: []v1.AMISelectorTerm{{ID: newer}}}},
			want: []string{newer + " kubernetes.io/os:In:windows kubernetes.io/arch:In:amd64 node.kubernetes.io/windows-build:In:10.0.20348"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			amis, err := e.p.List(ctx, tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(amis)); diff != "" {
				t.Errorf("List() mismatch (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("deprecation flips the choice once the cache expires", func(t *testing.T) {
		nc := nodeClass(v1.AMISelectorTerm{Name: "custom-?", Owner: "137112412989"})
		if err := e.ec2.DeprecateImage(newer, now); err != nil {
			t.Fatal(err)
		}
		e.clk.Step(ImagesTTL)
		amis, err := e.p.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{old + " kubernetes.io/arch:In:amd64"}, summary(amis)); diff != "" {
			t.Errorf("List() mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("missing ssm parameter", func(t *testing.T) {
		_, err := e.p.List(ctx, nodeClass(v1.AMISelectorTerm{SSMParameter: "/team/missing"}))
		if !IsNotFound(err) {
			t.Fatalf("error %v is not a NotFoundError", err)
		}
	})
	t.Run("nothing matches", func(t *testing.T) {
		_, err := e.p.List(ctx, nodeClass(v1.AMISelectorTerm{Tags: map[string]string{"team": "nobody"}}))
		if !IsNotFound(err) {
			t.Fatalf("error %v is not a NotFoundError", err)
		}
	})
}
