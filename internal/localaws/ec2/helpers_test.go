package ec2

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	testclock "k8s.io/utils/clock/testing"
)

// epoch is the fake clock's start.
var epoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// env is a Service behind httptest with a real SDK client.
type env struct {
	svc      *Service
	clk      *testclock.FakeClock
	client   *ec2.Client
	url      string
	requests atomic.Int64
	vpc      VPC
	subnets  []Subnet
	groups   []SecurityGroup
	images   []Image
}

// newEnv starts a seeded service: a VPC, one subnet per zone (a, b, c), two
// security groups and three images.
func newEnv(t *testing.T, maxAttempts int) *env {
	t.Helper()
	e := &env{clk: testclock.NewFakeClock(epoch)}
	e.svc = New(Config{Clock: e.clk, Seed: 42})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		e.svc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	if maxAttempts == 0 {
		maxAttempts = 1
	}
	e.client = ec2.New(ec2.Options{
		Region:       "us-east-1",
		HTTPClient:   &http.Client{Transport: awsclient.BufferRequestBodies(nil)},
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
	e.seed(t)
	return e
}

// seed adds the account's network and images.
func (e *env) seed(t *testing.T) {
	t.Helper()
	var err error
	e.vpc, err = e.svc.AddVPC(VPC{CIDR: "10.0.0.0/16", Tags: map[string]string{"Name": "main"}})
	must(t, err)
	for i, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		sn, err := e.svc.AddSubnet(Subnet{VPCID: e.vpc.ID, Zone: z, CIDR: "10.0." + string(rune('1'+i)) + ".0/24",
			Tags: map[string]string{"karpenter.sh/discovery": "demo", "Name": "private-" + z}})
		must(t, err)
		e.subnets = append(e.subnets, sn)
	}
	for _, name := range []string{"nodes", "control"} {
		g, err := e.svc.AddSecurityGroup(SecurityGroup{VPCID: e.vpc.ID, Name: name, Description: name + " group",
			Tags: map[string]string{"karpenter.sh/discovery": "demo-" + name}})
		must(t, err)
		e.groups = append(e.groups, g)
	}
	for _, img := range []Image{
		{Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20250501", OwnerAlias: "amazon", OwnerID: "137112412989", Public: true, CreationDate: epoch.Add(-48 * time.Hour)},
		{Name: "amazon-eks-node-al2023-arm64-standard-1.33-v20250501", Architecture: "arm64", OwnerAlias: "amazon", OwnerID: "137112412989", Public: true, CreationDate: epoch.Add(-47 * time.Hour)},
		{Name: "my-custom-ami", Tags: map[string]string{"team": "infra"}, CreationDate: epoch.Add(-24 * time.Hour)},
	} {
		out, err := e.svc.AddImage(img)
		must(t, err)
		e.images = append(e.images, out)
	}
}

// must fails the test on an error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// code returns the API error code the SDK surfaced, "" for nil.
func code(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not a smithy.APIError", err)
	}
	return ae.ErrorCode()
}

// raw posts a hand-made EC2 Query request, signed (a well-formed scope) or not.
func (e *env) raw(t *testing.T, form url.Values, signed bool) (status int, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url, strings.NewReader(form.Encode()))
	must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if signed {
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250601/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=00")
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(raw)
}

// filter builds an SDK filter.
func flt(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

// createTemplate creates a launch template through the SDK.
func (e *env) createTemplate(t *testing.T, name, imageID string) *ec2types.LaunchTemplate {
	t.Helper()
	out, err := e.client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(imageID),
			UserData:           aws.String("IyEvYmluL2Jhc2gKZWNobyBoaQo="),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("KarpenterNodeProfile")},
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
				DeviceIndex: aws.Int32(0), Groups: []string{e.groups[0].ID},
			}},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1)},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{
				ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}},
			}},
		},
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags:         []ec2types.Tag{{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("demo")}},
		}},
	})
	must(t, err)
	return out.LaunchTemplate
}

// fleet launches through CreateFleet with one override per (type, subnet).
func (e *env) fleet(t *testing.T, lt string, capacityType ec2types.DefaultTargetCapacityType, n int32, typesAndSubnets ...[2]string) (*ec2.CreateFleetOutput, error) {
	t.Helper()
	var ovs []ec2types.FleetLaunchTemplateOverridesRequest
	for _, ts := range typesAndSubnets {
		ovs = append(ovs, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(ts[0]), SubnetId: aws.String(ts[1])})
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   ovs,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: capacityType},
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeInstance,
			Tags:         []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}},
		}},
	}
	if capacityType == ec2types.DefaultTargetCapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return e.client.CreateFleet(context.Background(), in)
}

// mathCeil and mathRound keep the formula test readable.
func mathCeil(f float64) float64  { return math.Ceil(f) }
func mathRound(f float64) float64 { return math.Round(f) }

// runtimeGosched yields while waiting for a goroutine to reach the clock.
func runtimeGosched() { runtime.Gosched() }
