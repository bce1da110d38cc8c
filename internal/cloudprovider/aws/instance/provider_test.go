package instance_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// account is a local EC2 endpoint with a VPC, a subnet in each of two
// zones, a security group, an AMI and one launch template, reached through
// the real SDK client.
type account struct {
	svc     *localec2.Service
	client  *ec2.Client
	clock   *clocktesting.FakeClock
	subnets map[string]string
	image   string
}

func newAccount(t *testing.T) *account {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	svc := localec2.New(localec2.Config{Clock: clk, Seed: 7})
	vpc, err := svc.AddVPC(localec2.VPC{CIDR: "10.0.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	a := &account{svc: svc, clock: clk, subnets: map[string]string{}}
	for i, zone := range []string{"us-east-1a", "us-east-1b"} {
		sn, err := svc.AddSubnet(localec2.Subnet{VPCID: vpc.ID, Zone: zone, CIDR: []string{"10.0.0.0/19", "10.0.32.0/19"}[i]})
		if err != nil {
			t.Fatal(err)
		}
		a.subnets[zone] = sn.ID
	}
	img, err := svc.AddImage(localec2.Image{Name: "al2023", Architecture: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	a.image = img.ID
	server := httptest.NewServer(svc)
	t.Cleanup(server.Close)
	a.client = ec2.New(ec2.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(server.URL),
		Credentials:  aws.AnonymousCredentials{},
	}, func(o *ec2.Options) {
		o.Credentials = staticCredentials{}
		o.RetryMaxAttempts = 1
	})
	_, err = a.client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(img.ID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type staticCredentials struct{}

func (staticCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKIDLOCAL", SecretAccessKey: "local", Source: "test"}, nil
}

func (a *account) request(claim string, capacityType string, offerings ...instance.Offering) instance.LaunchRequest {
	return instance.LaunchRequest{
		NodeClaim:    claim,
		CapacityType: capacityType,
		Templates:    []instance.LaunchTemplate{{Name: "karpenter.k8s.aws/1", ImageID: a.image, InstanceTypes: []string{"m5.large", "c5.large", "m5.xlarge"}}},
		Offerings:    offerings,
		Subnets:      a.subnets,
		Tags: map[string]string{
			instance.TagNodePool: "default", instance.TagNodeClaim: claim, instance.TagEKSCluster: "dovetail",
			instance.TagNodeClass: "default",
		},
	}
}

func TestLaunchTakesTheCheapestOfferingAndIsIdempotent(t *testing.T) {
	a := newAccount(t)
	var unavailable []string
	p := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail",
		OnUnavailable: func(it, zone, ct, reason string) { unavailable = append(unavailable, it+"/"+zone+"/"+ct+"/"+reason) }})
	ctx := context.Background()
	// The cheapest offering has no capacity: EC2 skips it, the provider
	// marks it unavailable and the next one is launched.
	a.svc.SetInsufficientCapacity("c5.large", "us-east-1a", localec2.CapacityTypeOnDemand, true)
	req := a.request("claim-1", "on-demand",
		instance.Offering{InstanceType: "c5.large", Zone: "us-east-1a", Price: 0.085},
		instance.Offering{InstanceType: "m5.large", Zone: "us-east-1b", Price: 0.096},
		instance.Offering{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: 0.192},
	)
	inst, err := p.Launch(ctx, req)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if inst.Type != "m5.large" || inst.Zone != "us-east-1b" || inst.SubnetID != a.subnets["us-east-1b"] || inst.ImageID != a.image || inst.CapacityType != "on-demand" {
		t.Fatalf("launched %+v, want an on-demand m5.large in us-east-1b from the template's image", inst)
	}
	if diff := cmp.Diff([]string{"c5.large/us-east-1a/on-demand/InsufficientInstanceCapacity"}, unavailable); diff != "" {
		t.Fatalf("offerings marked unavailable (-want +got):\n%s", diff)
	}
	// EC2 describes the instance once its launch is visible; a second
	// launch for the same claim finds it instead of making another.
	again, err := p.Launch(ctx, req)
	if err != nil {
		t.Fatalf("second Launch: %v", err)
	}
	if again.ID != inst.ID {
		t.Fatalf("second launch for the same claim made %s, want the first instance %s", again.ID, inst.ID)
	}
	if n := len(a.svc.Instances()); n != 1 {
		t.Fatalf("EC2 has %d instances, want 1", n)
	}
	got, err := p.Get(ctx, inst.ID)
	if err != nil || got.Tags[instance.TagNodeClaim] != "claim-1" {
		t.Fatalf("Get = %+v, %v; want the instance tagged with its claim", got, err)
	}
	list, err := p.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != inst.ID {
		t.Fatalf("List = %v, %v; want the one instance", list, err)
	}
}

func TestLaunchFailsWithInsufficientCapacityWhenEveryOfferingIsShort(t *testing.T) {
	a := newAccount(t)
	p := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail"})
	a.svc.SetInsufficientCapacity("m5.large", "us-east-1a", localec2.CapacityTypeSpot, true)
	a.svc.SetInsufficientCapacity("m5.large", "us-east-1b", localec2.CapacityTypeSpot, true)
	_, err := p.Launch(context.Background(), a.request("claim-2", "spot",
		instance.Offering{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.04},
		instance.Offering{InstanceType: "m5.large", Zone: "us-east-1b", Price: 0.05},
	))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("Launch error = %v, want an InsufficientCapacityError", err)
	}
	if n := len(a.svc.Instances()); n != 0 {
		t.Fatalf("EC2 has %d instances, want none", n)
	}
}

func TestDeleteTerminatesAndReportsGone(t *testing.T) {
	a := newAccount(t)
	p := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail"})
	ctx := context.Background()
	inst, err := p.Launch(ctx, a.request("claim-3", "on-demand", instance.Offering{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.096}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, inst.ID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want NodeClaimNotFound once terminating", err)
	}
	if _, err := p.Get(ctx, inst.ID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get after Delete = %v, want NodeClaimNotFound", err)
	}
	if err := p.Delete(ctx, inst.ID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second Delete = %v, want NodeClaimNotFound", err)
	}
}

// TestEventualConsistency: EC2 does not describe a just-launched instance
// for a while. Within the window the provider neither takes it for gone nor
// launches a second one for its claim; after the window a truly unknown
// instance is gone.
func TestEventualConsistency(t *testing.T) {
	a := newAccount(t)
	p := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail", ConsistencyWindow: time.Minute})
	ctx := context.Background()
	a.svc.SetDescribeLag(30 * time.Second)
	inst, err := p.Launch(ctx, a.request("claim-4", "on-demand", instance.Offering{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.096}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, inst.ID); err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get of a just-launched instance = %v, want a retryable error", err)
	}
	if err := p.Delete(ctx, inst.ID); err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete of a just-launched instance = %v, want a retryable error", err)
	}
	a.clock.Step(31 * time.Second)
	if got, err := p.Get(ctx, inst.ID); err != nil || got.ID != inst.ID {
		t.Fatalf("Get after the lag = %+v, %v; want the instance", got, err)
	}
	if _, err := p.Get(ctx, "i-0000000000000dead"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get of an unknown instance = %v, want NodeClaimNotFound", err)
	}
}

func TestParseProviderID(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    string
		wantErr bool
	}{
		"zonal":      {in: "aws:///us-east-1a/i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		"kwok":       {in: "kwok://node-1", wantErr: true},
		"no zone":    {in: "aws:///i-0123", wantErr: true},
		"not an id":  {in: "aws:///us-east-1a/node-1", wantErr: true},
		"extra path": {in: "aws:///us-east-1a/i-1/x", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := instance.ParseProviderID(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseProviderID(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestRelaunchAfterARestartDuringDescribeLag: a controller that restarted
// after CreateFleet answered, but before the claim recorded the instance,
// launches the claim again while EC2 does not describe the new instance
// yet, so looking it up by tag finds nothing. The CreateFleet ClientToken
// (the claim's UID and the request) makes EC2 answer with the first
// instance instead of launching a second.
func TestRelaunchAfterARestartDuringDescribeLag(t *testing.T) {
	a := newAccount(t)
	ctx := context.Background()
	a.svc.SetDescribeLag(time.Minute)
	req := a.request("claim-5", "on-demand", instance.Offering{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.096})
	req.NodeClaimUID = "5d9c2b3e-0000-4000-8000-000000000005"
	first, err := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail"}).Launch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	restarted := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail"})
	again, err := restarted.Launch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID {
		t.Errorf("the relaunch made %s, want the first launch's %s", again.ID, first.ID)
	}
	if n := len(a.svc.Instances()); n != 1 {
		t.Errorf("EC2 has %d instances, want 1", n)
	}
	// Another claim with the same request but its own UID launches its own.
	other := req
	other.NodeClaimUID = "5d9c2b3e-0000-4000-8000-000000000006"
	if inst, err := restarted.Launch(ctx, other); err != nil || inst.ID == first.ID {
		t.Errorf("a launch for another claim UID = %+v, %v; want a new instance", inst, err)
	}
}

// TestPrioritizedLaunchFollowsTheOverlaidPrices: a launch whose prices a
// NodeOverlay changed asks EC2 for the prioritized strategies, and EC2
// launches the offering with the lowest Priority (the overlaid price)
// rather than its own cheapest; without it EC2's lowest price wins.
func TestPrioritizedLaunchFollowsTheOverlaidPrices(t *testing.T) {
	for _, tc := range []struct {
		name         string
		capacityType string
		prioritized  bool
		want         string
	}{
		{"on-demand, EC2's prices", "on-demand", false, "c5.large"},
		{"on-demand, overlaid prices", "on-demand", true, "m5.xlarge"},
		{"spot, overlaid prices", "spot", true, "m5.xlarge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAccount(t)
			p := instance.NewProvider(a.client, a.clock, instance.Options{ClusterName: "dovetail"})
			// m5.xlarge costs EC2 the most, but an overlay made it the
			// cheapest: its Price (the override's Priority) is lowest.
			req := a.request("claim-"+tc.capacityType, tc.capacityType,
				instance.Offering{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: 0.01},
				instance.Offering{InstanceType: "c5.large", Zone: "us-east-1a", Price: 0.5},
				instance.Offering{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.6},
			)
			req.Prioritized = tc.prioritized
			inst, err := p.Launch(context.Background(), req)
			if err != nil {
				t.Fatalf("Launch: %v", err)
			}
			if inst.Type != tc.want {
				t.Errorf("launched %s, want %s", inst.Type, tc.want)
			}
		})
	}
}
