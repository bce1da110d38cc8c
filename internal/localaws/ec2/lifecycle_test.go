package ec2

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
)

func TestLaunchTemplates(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	lt := e.createTemplate(t, "karpenter.k8s.aws/1", e.images[0].ID)
	e.createTemplate(t, "other", e.images[1].ID)
	if !strings.HasPrefix(aws.ToString(lt.LaunchTemplateId), "lt-") || aws.ToInt64(lt.LatestVersionNumber) != 1 {
		t.Errorf("created %+v", lt)
	}
	stored := e.svc.LaunchTemplates()[0]
	gotData := fmt.Sprint(stored.Data.ImageID, string(stored.Data.UserData), stored.Data.IAMInstanceProfile, stored.Data.securityGroups(), stored.Data.MetadataOptions, stored.Data.TagSpecifications, stored.Tags)
	wantData := fmt.Sprint(e.images[0].ID, "#!/bin/bash\necho hi\n", "KarpenterNodeProfile", []string{e.groups[0].ID}, map[string]string{"HttpPutResponseHopLimit": "1", "HttpTokens": "required"},
		[]TagSpecification{{ResourceType: "network-interface", Tags: map[string]string{"karpenter.sh/nodepool": "default"}}}, map[string]string{"eks:eks-cluster-name": "demo"})
	if gotData != wantData {
		t.Errorf("stored data\n got %s\nwant %s", gotData, wantData)
	}
	big := base64.StdEncoding.EncodeToString(make([]byte, 16*1024+1))
	tests := []struct {
		name     string
		call     func() ([]string, error)
		want     []string
		wantCode string
	}{
		{"duplicate name", func() ([]string, error) {
			_, err := e.client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("other"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(e.images[0].ID)}})
			return nil, err
		}, nil, "InvalidLaunchTemplateName.AlreadyExistsException"},
		{"invalid base64 user data", func() ([]string, error) {
			_, err := e.client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("bad-ud"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{UserData: aws.String("!!not base64")}})
			return nil, err
		}, nil, "InvalidUserData.Malformed"},
		{"user data above 16 KiB", func() ([]string, error) {
			_, err := e.client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("big-ud"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{UserData: aws.String(big)}})
			return nil, err
		}, nil, "InvalidParameterValue"},
		{"describe by name", func() ([]string, error) {
			out, err := e.client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"karpenter.k8s.aws/1"}})
			return ltNames(out), err
		}, []string{"karpenter.k8s.aws/1"}, ""},
		{"describe by tag", func() ([]string, error) {
			out, err := e.client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{flt("tag:eks:eks-cluster-name", "demo")}, MaxResults: aws.Int32(200)})
			return ltNames(out), err
		}, []string{"karpenter.k8s.aws/1", "other"}, ""},
		{"describe by tag-key and name wildcard", func() ([]string, error) {
			out, err := e.client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{flt("tag-key", "eks:eks-cluster-name"), flt("launch-template-name", "karpenter.k8s.aws/*")}})
			return ltNames(out), err
		}, []string{"karpenter.k8s.aws/1"}, ""},
		{"unknown name", func() ([]string, error) {
			_, err := e.client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}})
			return nil, err
		}, nil, "InvalidLaunchTemplateName.NotFoundException"},
		{"MaxResults above 200", func() ([]string, error) {
			_, err := e.client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{MaxResults: aws.Int32(201)})
			return nil, err
		}, nil, "InvalidParameterValue"},
		{"delete by id", func() ([]string, error) {
			_, err := e.client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId})
			if err != nil {
				return nil, err
			}
			out, err := e.client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
			return ltNames(out), err
		}, []string{"other"}, ""},
		{"delete unknown", func() ([]string, error) {
			_, err := e.client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/1")})
			return nil, err
		}, nil, "InvalidLaunchTemplateName.NotFoundException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			if c := code(t, err); c != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", c, tt.wantCode, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// ltNames lists the names of described templates.
func ltNames(out *ec2.DescribeLaunchTemplatesOutput) []string {
	if out == nil {
		return nil
	}
	var r []string
	for _, lt := range out.LaunchTemplates {
		r = append(r, aws.ToString(lt.LaunchTemplateName))
	}
	return r
}

// cheapestSpotZones orders the three zones by the catalog's spot price of a type.
func cheapestSpotZones(t *testing.T, typ string) []string {
	t.Helper()
	prices, err := catalog.LoadPrices(catalog.DefaultOptions())
	must(t, err)
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	sort.SliceStable(zones, func(i, j int) bool {
		return prices[catalog.OfferingKey{InstanceType: typ, Zone: zones[i], CapacityType: "spot"}] < prices[catalog.OfferingKey{InstanceType: typ, Zone: zones[j], CapacityType: "spot"}]
	})
	return zones
}

func TestCreateFleetAllocation(t *testing.T) {
	spotOrder := cheapestSpotZones(t, "m5.large")
	zoneIdx := map[string]int{"us-east-1a": 0, "us-east-1b": 1, "us-east-1c": 2}
	type launch struct{ Type, Zone, Lifecycle string }
	type fleetError struct{ Code, Type, Zone, Lifecycle string }
	tests := []struct {
		name       string
		capacity   ec2types.DefaultTargetCapacityType
		ice        [][3]string
		overrides  [][2]string // type, zone
		wantLaunch []launch
		wantErrors []fleetError
	}{
		{
			name: "on-demand lowest-price takes the cheapest type", capacity: ec2types.DefaultTargetCapacityTypeOnDemand,
			overrides:  [][2]string{{"m5.2xlarge", "us-east-1a"}, {"m5.large", "us-east-1c"}, {"m5.xlarge", "us-east-1b"}},
			wantLaunch: []launch{{"m5.large", "us-east-1c", "on-demand"}},
		},
		{
			name: "on-demand skips an offering with insufficient capacity", capacity: ec2types.DefaultTargetCapacityTypeOnDemand,
			ice:        [][3]string{{"m5.large", "us-east-1c", "on-demand"}},
			overrides:  [][2]string{{"m5.2xlarge", "us-east-1a"}, {"m5.large", "us-east-1c"}, {"m5.xlarge", "us-east-1b"}},
			wantLaunch: []launch{{"m5.xlarge", "us-east-1b", "on-demand"}},
			wantErrors: []fleetError{{"InsufficientInstanceCapacity", "m5.large", "us-east-1c", "on-demand"}},
		},
		{
			name: "spot price-capacity-optimized takes the cheapest zone", capacity: ec2types.DefaultTargetCapacityTypeSpot,
			overrides:  [][2]string{{"m5.large", "us-east-1a"}, {"m5.large", "us-east-1b"}, {"m5.large", "us-east-1c"}},
			wantLaunch: []launch{{"m5.large", spotOrder[0], "spot"}},
		},
		{
			name: "spot skips the cheapest pool without capacity", capacity: ec2types.DefaultTargetCapacityTypeSpot,
			ice:        [][3]string{{"m5.large", spotOrder[0], "spot"}, {"m5.large", spotOrder[1], "on-demand"}},
			overrides:  [][2]string{{"m5.large", "us-east-1a"}, {"m5.large", "us-east-1b"}, {"m5.large", "us-east-1c"}},
			wantLaunch: []launch{{"m5.large", spotOrder[1], "spot"}},
			wantErrors: []fleetError{{"InsufficientInstanceCapacity", "m5.large", spotOrder[0], "spot"}},
		},
		{
			name: "every pool short: errors only", capacity: ec2types.DefaultTargetCapacityTypeOnDemand,
			ice:        [][3]string{{"m5.large", "us-east-1a", "on-demand"}, {"c5.large", "us-east-1a", "on-demand"}},
			overrides:  [][2]string{{"c5.large", "us-east-1a"}, {"m5.large", "us-east-1a"}},
			wantErrors: []fleetError{{"InsufficientInstanceCapacity", "c5.large", "us-east-1a", "on-demand"}, {"InsufficientInstanceCapacity", "m5.large", "us-east-1a", "on-demand"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 1)
			lt := e.createTemplate(t, "tpl", e.images[0].ID)
			for _, k := range tt.ice {
				e.svc.SetInsufficientCapacity(k[0], k[1], k[2], true)
			}
			var ovs [][2]string
			for _, o := range tt.overrides {
				ovs = append(ovs, [2]string{o[0], e.subnets[zoneIdx[o[1]]].ID})
			}
			out, err := e.fleet(t, *lt.LaunchTemplateName, tt.capacity, 1, ovs...)
			must(t, err)
			var gotLaunch []launch
			for _, in := range out.Instances {
				o := in.LaunchTemplateAndOverrides.Overrides
				gotLaunch = append(gotLaunch, launch{string(in.InstanceType), aws.ToString(o.AvailabilityZone), string(in.Lifecycle)})
				if len(in.InstanceIds) != 1 || aws.ToString(o.SubnetId) != e.subnets[zoneIdx[aws.ToString(o.AvailabilityZone)]].ID {
					t.Errorf("instance item %+v", in)
				}
			}
			var gotErrors []fleetError
			for _, fe := range out.Errors {
				o := fe.LaunchTemplateAndOverrides.Overrides
				gotErrors = append(gotErrors, fleetError{aws.ToString(fe.ErrorCode), string(o.InstanceType), aws.ToString(o.AvailabilityZone), string(fe.Lifecycle)})
				if aws.ToString(fe.ErrorMessage) == "" || aws.ToString(fe.LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateName) != "tpl" || aws.ToString(o.SubnetId) == "" {
					t.Errorf("error item %+v lacks message, template or subnet", fe)
				}
			}
			if diff := cmp.Diff(tt.wantLaunch, gotLaunch); diff != "" {
				t.Errorf("launched (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrors, gotErrors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(aws.ToString(out.FleetId), "fleet-") {
				t.Errorf("fleet id %q", aws.ToString(out.FleetId))
			}
		})
	}
}

func TestCreateFleetPrioritizedAndErrors(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	e.createTemplate(t, "tpl", e.images[0].ID)
	base := func() *ec2.CreateFleetInput {
		return &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("tpl"), Version: aws.String("$Latest")},
				Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
					{InstanceType: "m5.large", SubnetId: aws.String(e.subnets[0].ID), Priority: aws.Float64(2)},
					{InstanceType: "m5.xlarge", SubnetId: aws.String(e.subnets[0].ID), Priority: aws.Float64(1), ImageId: aws.String(e.images[2].ID)},
				},
			}},
			OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(2), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		}
	}
	out, err := e.client.CreateFleet(ctx, base())
	must(t, err)
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" || len(out.Instances[0].InstanceIds) != 2 {
		t.Fatalf("prioritized: %+v", out.Instances)
	}
	in, _ := e.svc.Instance(out.Instances[0].InstanceIds[0])
	if in.ImageID != e.images[2].ID {
		t.Errorf("override image %s, want %s", in.ImageID, e.images[2].ID)
	}
	tests := []struct {
		name     string
		mutate   func(*ec2.CreateFleetInput)
		wantCode string
	}{
		{"unknown template", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("gone")
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"unknown instance type", func(in *ec2.CreateFleetInput) { in.LaunchTemplateConfigs[0].Overrides[0].InstanceType = "m5.huge" }, "InvalidParameterValue"},
		{"not instant", func(in *ec2.CreateFleetInput) { in.Type = ec2types.FleetTypeMaintain }, "InvalidParameterValue"},
		{"zero capacity", func(in *ec2.CreateFleetInput) { in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(0) }, "InvalidParameterValue"},
		{"unknown subnet", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides[0].SubnetId = aws.String("subnet-00000000000000000")
		}, "InvalidSubnetID.NotFound"},
		{"dry run", func(in *ec2.CreateFleetInput) { in.DryRun = aws.Bool(true) }, "DryRunOperation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			tt.mutate(in)
			_, err := e.client.CreateFleet(ctx, in)
			if got := code(t, err); got != tt.wantCode {
				t.Errorf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
		})
	}
	// An AMI of the wrong architecture is a per-override error.
	armIn := base()
	armIn.LaunchTemplateConfigs[0].Overrides = []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m6g.large", SubnetId: aws.String(e.subnets[0].ID)}}
	out, err = e.client.CreateFleet(ctx, armIn)
	must(t, err)
	if len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterValue" {
		t.Errorf("arm64 type with x86_64 AMI: %+v %+v", out.Instances, out.Errors)
	}
}

func TestInstanceLifecycle(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	unsubscribe := e.svc.OnInstanceChange(func(in Instance) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(in.State))
	})
	defer unsubscribe()
	lt := e.createTemplate(t, "tpl", e.images[0].ID)
	out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeSpot, 1, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	id := out.Instances[0].InstanceIds[0]
	describe := func() (ec2types.Instance, error) {
		out, err := e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return ec2types.Instance{}, err
		}
		return out.Reservations[0].Instances[0], nil
	}
	ips := func() int32 {
		out, err := e.client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{e.subnets[0].ID}})
		must(t, err)
		return aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
	}
	inst, err := describe()
	must(t, err)
	got := fmt.Sprintln(inst.State.Name, aws.ToInt32(inst.State.Code), inst.InstanceLifecycle, strings.HasPrefix(aws.ToString(inst.SpotInstanceRequestId), "sir-"),
		inst.Architecture, aws.ToString(inst.VpcId), aws.ToString(inst.PrivateIpAddress), aws.ToString(inst.IamInstanceProfile.Arn),
		aws.ToString(inst.SecurityGroups[0].GroupId), aws.ToString(inst.SecurityGroups[0].GroupName), inst.NetworkInterfaces[0].InterfaceType != nil,
		inst.Placement.Tenancy, aws.ToString(inst.Placement.AvailabilityZoneId), aws.ToTime(inst.LaunchTime).Equal(epoch))
	want := fmt.Sprintln("pending", 0, "spot", true, "x86_64", e.vpc.ID, "10.0.1.4", "arn:aws:iam::123456789012:instance-profile/KarpenterNodeProfile",
		e.groups[0].ID, "nodes", true, "default", "use1-az1", true)
	if got != want {
		t.Errorf("described\n got %s\nwant %s", got, want)
	}
	tags := map[string]string{}
	for _, tg := range inst.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags["karpenter.sh/nodepool"] != "default" || tags["aws:ec2launchtemplate:id"] != aws.ToString(lt.LaunchTemplateId) || tags["aws:ec2:fleet-id"] != aws.ToString(out.FleetId) {
		t.Errorf("tags %v", tags)
	}
	if ips() != 250 {
		t.Errorf("available IPs %d after launch, want 250", ips())
	}
	snap := e.svc.Instances()
	if len(snap) != 1 || string(snap[0].UserData) != "#!/bin/bash\necho hi\n" || snap[0].LaunchTemplateName != "tpl" || snap[0].PrivateDNSName != "ip-10-0-1-4.ec2.internal" || snap[0].CapacityType != "spot" {
		t.Errorf("snapshot %+v", snap)
	}

	e.clk.Step(DefaultPendingDelay)
	e.svc.Advance()
	if inst, _ = describe(); inst.State.Name != ec2types.InstanceStateNameRunning {
		t.Errorf("after the pending delay: %s", inst.State.Name)
	}
	term, err := e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	must(t, err)
	tc := term.TerminatingInstances[0]
	if tc.PreviousState.Name != ec2types.InstanceStateNameRunning || tc.CurrentState.Name != ec2types.InstanceStateNameShuttingDown || aws.ToInt32(tc.CurrentState.Code) != 32 {
		t.Errorf("terminate: %+v -> %+v", tc.PreviousState, tc.CurrentState)
	}
	// Terminating again is fine.
	_, err = e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	must(t, err)
	e.clk.Step(DefaultShuttingDownDelay)
	inst, err = describe()
	must(t, err)
	if inst.State.Name != ec2types.InstanceStateNameTerminated || aws.ToString(inst.StateReason.Code) != "Client.UserInitiatedShutdown" {
		t.Errorf("after the shutdown delay: %s %+v", inst.State.Name, inst.StateReason)
	}
	if ips() != 251 {
		t.Errorf("available IPs %d after termination, want 251", ips())
	}
	e.clk.Step(time.Hour)
	if _, err = describe(); code(t, err) != "InvalidInstanceID.NotFound" {
		t.Errorf("an hour after termination: %v", err)
	}
	if _, err := e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); code(t, err) != "InvalidInstanceID.NotFound" {
		t.Errorf("terminating a vanished instance: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"pending", "running", "shutting-down", "terminated"}, seen); diff != "" {
		t.Errorf("OnInstanceChange (-want +got):\n%s", diff)
	}
}

func TestStopAndTerminateBehindTheBack(t *testing.T) {
	e := newEnv(t, 1)
	lt := e.createTemplate(t, "tpl", e.images[0].ID)
	out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeSpot, 2, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	a, b := out.Instances[0].InstanceIds[0], out.Instances[0].InstanceIds[1]
	must(t, e.svc.StopInstance(a))
	must(t, e.svc.TerminateInstance(b))
	e.clk.Step(10 * time.Second)
	e.svc.Advance()
	got := map[string]string{}
	for _, in := range e.svc.Instances() {
		got[in.ID] = string(in.State) + "/" + in.StateReason
	}
	want := map[string]string{a: "stopped/Server.ScheduledStop", b: "terminated/Server.SpotInstanceTermination"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := e.svc.StopInstance("i-00000000000000000"); err == nil {
		t.Error("stopping an unknown instance succeeded")
	}
}

func TestRunAdvancesByTicker(t *testing.T) {
	e := newEnv(t, 1)
	lt := e.createTemplate(t, "tpl", e.images[0].ID)
	running := make(chan string, 1)
	e.svc.OnInstanceChange(func(in Instance) {
		if in.State == StateRunning {
			running <- in.ID
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.svc.Run(ctx); close(done) }()
	out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	for !e.clk.HasWaiters() {
		runtimeGosched()
	}
	e.clk.Step(DefaultPendingDelay)
	if id := <-running; id != out.Instances[0].InstanceIds[0] {
		t.Errorf("running %s", id)
	}
	cancel()
	<-done
}

func TestDescribeInstancesFiltersAndErrors(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	lt := e.createTemplate(t, "tpl", e.images[0].ID)
	od, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 3, [2]string{"m5.large", e.subnets[1].ID})
	must(t, err)
	sp, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeSpot, 1, [2]string{"c5.large", e.subnets[2].ID})
	must(t, err)
	odIDs, spID := od.Instances[0].InstanceIds, sp.Instances[0].InstanceIds[0]
	_, err = e.client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{odIDs[0]}, Tags: []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String("node-a")}}})
	must(t, err)
	_, err = e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{odIDs[2]}})
	must(t, err)
	all := append(slices.Clone(odIDs), spID)
	tests := []struct {
		name     string
		in       ec2.DescribeInstancesInput
		want     []string
		wantCode string
	}{
		{"all", ec2.DescribeInstancesInput{}, all, ""},
		{"state", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("instance-state-name", "pending", "running", "stopping", "stopped")}}, []string{odIDs[0], odIDs[1], spID}, ""},
		{"tag-key", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("tag-key", "karpenter.sh/nodepool")}, MaxResults: aws.Int32(1000)}, all, ""},
		{"tag", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("tag:Name", "node-*")}}, []string{odIDs[0]}, ""},
		{"instance-id", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("instance-id", spID)}}, []string{spID}, ""},
		{"lifecycle", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("instance-lifecycle", "spot")}}, []string{spID}, ""},
		{"type and zone", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("instance-type", "m5.large"), flt("availability-zone", "us-east-1b")}}, odIDs, ""},
		{"by ids", ec2.DescribeInstancesInput{InstanceIds: []string{spID, odIDs[1]}}, []string{spID, odIDs[1]}, ""},
		{"unknown id", ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000000000000000", spID}}, nil, "InvalidInstanceID.NotFound"},
		{"malformed id", ec2.DescribeInstancesInput{InstanceIds: []string{"instance-1"}}, nil, "InvalidInstanceID.Malformed"},
		{"ids with MaxResults", ec2.DescribeInstancesInput{InstanceIds: []string{spID}, MaxResults: aws.Int32(5)}, nil, "InvalidParameterCombination"},
		{"MaxResults below 5", ec2.DescribeInstancesInput{MaxResults: aws.Int32(4)}, nil, "InvalidParameterValue"},
		{"unknown filter", ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("instance-colour", "red")}}, nil, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.client.DescribeInstances(ctx, &tt.in)
			if got := code(t, err); got != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
			if diff := cmp.Diff(tt.want, instanceIDs(out)); diff != "" {
				t.Errorf("instances (-want +got):\n%s", diff)
			}
		})
	}
	// Pagination through the SDK paginator.
	for range 3 {
		_, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
		must(t, err)
	}
	p := ec2.NewDescribeInstancesPaginator(e.client, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	var got []string
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		must(t, err)
		pages++
		got = append(got, instanceIDs(out)...)
	}
	if len(got) != 7 || pages != 2 {
		t.Errorf("paginated %d instances in %d pages, want 7 in 2", len(got), pages)
	}
}

// instanceIDs lists the described instance ids in order.
func instanceIDs(out *ec2.DescribeInstancesOutput) []string {
	if out == nil {
		return nil
	}
	var r []string
	for _, res := range out.Reservations {
		for _, in := range res.Instances {
			r = append(r, aws.ToString(in.InstanceId))
		}
	}
	return r
}

func TestCreateTags(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	lt := e.createTemplate(t, "tpl", e.images[0].ID)
	out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	id := out.Instances[0].InstanceIds[0]
	tag := []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")}}
	tests := []struct {
		name      string
		resources []string
		tags      []ec2types.Tag
		wantCode  string
	}{
		{"instance and template", []string{id, aws.ToString(lt.LaunchTemplateId)}, tag, ""},
		{"unknown instance", []string{"i-00000000000000000"}, tag, "InvalidInstanceID.NotFound"},
		{"unknown template", []string{"lt-00000000000000000"}, tag, "InvalidLaunchTemplateId.NotFound"},
		{"invalid id", []string{"bucket-1"}, tag, "InvalidID"},
		{"reserved key", []string{id}, []ec2types.Tag{{Key: aws.String("aws:x"), Value: aws.String("y")}}, "InvalidParameterValue"},
		{"empty key", []string{id}, []ec2types.Tag{{Key: aws.String(""), Value: aws.String("y")}}, "MissingParameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: tt.resources, Tags: tt.tags})
			if got := code(t, err); got != tt.wantCode {
				t.Errorf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
		})
	}
	in, _ := e.svc.Instance(id)
	if in.Tags["karpenter.sh/nodeclaim"] != "default-abcde" {
		t.Errorf("instance tags %v", in.Tags)
	}
	if e.svc.LaunchTemplates()[0].Tags["karpenter.sh/nodeclaim"] != "default-abcde" {
		t.Errorf("template tags %v", e.svc.LaunchTemplates()[0].Tags)
	}
}

func TestDescribeLag(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	e.svc.SetDescribeLag(3 * time.Second)
	lt := e.createTemplate(t, "tpl", e.images[0].ID)
	out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	id := out.Instances[0].InstanceIds[0]
	_, err = e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if got := code(t, err); got != "InvalidInstanceID.NotFound" {
		t.Errorf("by id during the lag: %q", got)
	}
	list, err := e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{flt("tag-key", "karpenter.sh/nodepool")}})
	must(t, err)
	if ids := instanceIDs(list); len(ids) != 0 {
		t.Errorf("listed during the lag: %v", ids)
	}
	e.clk.Step(3 * time.Second)
	list, err = e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	must(t, err)
	if diff := cmp.Diff([]string{id}, instanceIDs(list)); diff != "" {
		t.Errorf("after the lag (-want +got):\n%s", diff)
	}
}

func TestThrottle(t *testing.T) {
	t.Run("always", func(t *testing.T) {
		e := newEnv(t, 3)
		e.svc.SetThrottle(1)
		before := e.requests.Load()
		_, err := e.client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
		if got := code(t, err); got != "RequestLimitExceeded" {
			t.Errorf("code %q, want RequestLimitExceeded", got)
		}
		if n := e.requests.Load() - before; n != 3 {
			t.Errorf("%d attempts, want 3 (the SDK retries throttling)", n)
		}
	})
	t.Run("half, deterministic", func(t *testing.T) {
		var outcomes [2][]bool
		for run := range 2 {
			e := newEnv(t, 1)
			e.svc.SetThrottle(0.5)
			for range 20 {
				_, err := e.client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
				outcomes[run] = append(outcomes[run], err == nil)
			}
		}
		if diff := cmp.Diff(outcomes[0], outcomes[1]); diff != "" {
			t.Errorf("same seed, different throttling (-first +second):\n%s", diff)
		}
		ok := 0
		for _, o := range outcomes[0] {
			if o {
				ok++
			}
		}
		if ok == 0 || ok == 20 {
			t.Errorf("%d of 20 requests succeeded at rate 0.5", ok)
		}
	})
	t.Run("retries succeed", func(t *testing.T) {
		e := newEnv(t, 10)
		e.svc.SetThrottle(0.5)
		for range 5 {
			_, err := e.client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
			must(t, err)
		}
	})
}

// TestAddressesAreNotReusedAtOnce: a new instance does not get the address
// (and so the node name) of one that just terminated, whose Node may still be
// draining; addresses come round again only after the rest of the block.
func TestAddressesAreNotReusedAtOnce(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	lt := e.createTemplate(t, "reuse", e.images[0].ID)
	launch := func() (string, string) {
		t.Helper()
		out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
		must(t, err)
		id := out.Instances[0].InstanceIds[0]
		in, ok := e.svc.Instance(id)
		if !ok {
			t.Fatalf("instance %s not found", id)
		}
		return id, in.PrivateIP
	}
	first, firstIP := launch()
	if _, err := e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{first}}); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(time.Minute)
	e.svc.Advance()
	if in, _ := e.svc.Instance(first); in.State != StateTerminated {
		t.Fatalf("first instance is %s, want terminated", in.State)
	}
	if _, secondIP := launch(); secondIP == firstIP {
		t.Fatalf("the next instance got %s, the address of the instance that just terminated", secondIP)
	}
}
