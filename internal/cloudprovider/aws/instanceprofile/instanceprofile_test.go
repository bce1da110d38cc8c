package instanceprofile

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	localiam "github.com/dovetail-autoscaler/dovetail/internal/localaws/iam"
)

var start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func newLocalIAM(t *testing.T) (*localiam.Service, *Provider, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(start)
	svc := localiam.New(localiam.Config{Clock: clk})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client := iam.New(iam.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")})
	return svc, NewProvider(client, "us-west-2", "demo", clk), clk
}

func nodeClass(role string) *v1.EC2NodeClass {
	return &v1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "0b7c3e4e-1111-2222-3333-444455556666"},
		Spec:       v1.EC2NodeClassSpec{Role: role, Tags: map[string]string{"team": "infra"}},
	}
}

func TestRoleLifecycle(t *testing.T) {
	svc, p, clk := newLocalIAM(t)
	svc.AddRole("NodeRole", "/eks/")
	svc.AddRole("OtherRole", "")
	ctx := context.Background()
	nc := nodeClass("arn:aws:iam::123456789012:role/eks/NodeRole")

	// 1. Created with path, tags and the role (ARN and path stripped).
	name, err := p.Resolve(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if name != p.Name(nc) {
		t.Errorf("Resolve() = %q, want %q", name, p.Name(nc))
	}
	want := []localiam.InstanceProfile{{
		Name: p.Name(nc), Path: "/karpenter/us-west-2/demo/0b7c3e4e-1111-2222-3333-444455556666/", Roles: []string{"NodeRole"},
		Tags: map[string]string{
			"kubernetes.io/cluster/demo": "owned", "eks:eks-cluster-name": "demo", "karpenter.k8s.aws/ec2nodeclass": "default",
			"topology.kubernetes.io/region": "us-west-2", "team": "infra",
		},
	}}
	ignore := cmpopts.IgnoreFields(localiam.InstanceProfile{}, "ID", "ARN", "CreateDate")
	if diff := cmp.Diff(want, svc.InstanceProfiles(), ignore); diff != "" {
		t.Errorf("profiles mismatch (-want +got):\n%s", diff)
	}

	// 2. A new role replaces the old one (after the cache ages out).
	nc.Spec.Role = "OtherRole"
	clk.Step(time.Minute)
	if _, err := p.Resolve(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if got := svc.InstanceProfiles()[0].Roles; !cmp.Equal(got, []string{"OtherRole"}) {
		t.Errorf("roles = %v, want [OtherRole]", got)
	}

	// 3. A role that does not exist names spec.role; the profile stays tracked.
	nc.Spec.Role = "Missing"
	_, err = p.Resolve(ctx, nc)
	if !IsRoleNotFound(err) || err.Error() != `spec.role: IAM role "Missing" not found` {
		t.Fatalf("Resolve() error = %v, want RoleNotFoundError naming spec.role", err)
	}

	// 4. Delete removes the role and the profile, and is idempotent.
	for range 2 {
		if err := p.Delete(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	if got := svc.InstanceProfiles(); len(got) != 0 {
		t.Errorf("profiles left after Delete: %v", got)
	}
}

// TestMissingRoleCreatesNoProfile: a class naming a role IAM does not have
// gets RoleNotFoundError and leaves no instance profile behind, even while
// the class lives on.
func TestMissingRoleCreatesNoProfile(t *testing.T) {
	svc, p, _ := newLocalIAM(t)
	ctx := context.Background()
	nc := nodeClass("Missing")
	if _, err := p.Resolve(ctx, nc); !IsRoleNotFound(err) {
		t.Fatalf("Resolve() error = %v, want RoleNotFoundError", err)
	}
	if got := svc.InstanceProfiles(); len(got) != 0 {
		t.Fatalf("profiles after resolving a missing role: %v, want none", got)
	}
	// The user switches to an existing profile; deleting finds nothing owned.
	nc.Spec.Role, nc.Spec.InstanceProfile = "", aws.String("byo")
	if err := p.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if got := svc.InstanceProfiles(); len(got) != 0 {
		t.Errorf("profiles leaked: %v", got)
	}
}

func TestExistingInstanceProfile(t *testing.T) {
	svc, p, _ := newLocalIAM(t)
	svc.AddRole("NodeRole", "")
	ctx := context.Background()
	other := nodeClass("NodeRole")
	other.Name, other.UID = "other", "uid-2"
	byo, err := p.Resolve(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	nc := nodeClass("")
	nc.Spec.InstanceProfile = aws.String(byo)
	if got, err := p.Resolve(ctx, nc); err != nil || got != byo {
		t.Errorf("Resolve() = %q, %v; want %q", got, err, byo)
	}
	nc.Spec.InstanceProfile = aws.String("nope")
	_, err = p.Resolve(ctx, nc)
	if !IsNotFound(err) || err.Error() != `spec.instanceProfile: instance profile "nope" not found` {
		t.Errorf("Resolve() error = %v, want NotFoundError naming spec.instanceProfile", err)
	}
}
