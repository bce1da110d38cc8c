package localaws

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// launch starts one instance of instanceType in the first subnet through the
// SDK and returns its id, or the CreateFleet errors.
func launch(t *testing.T, s *Server, cfg aws.Config, instanceType string, capacity ec2types.DefaultTargetCapacityType) (string, []ec2types.CreateFleetError) {
	t.Helper()
	ctx := context.Background()
	client := awsec2.NewFromConfig(cfg)
	ami, _ := s.LatestAMI(FamilyAL2023, VariantStandard, ArchX86_64)
	name := "lt-" + instanceType + "-" + string(capacity)
	if _, err := client.CreateLaunchTemplate(ctx, &awsec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(ami.Image.ID)}}); err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	out, err := client.CreateFleet(ctx, &awsec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(instanceType), SubnetId: aws.String(s.Seed().Subnets[0].ID)}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: capacity},
	})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) == 0 {
		return "", out.Errors
	}
	return out.Instances[0].InstanceIds[0], nil
}

// receive reads one message from the interruption queue and returns its
// detail-type and source.
func receive(t *testing.T, s *Server, cfg aws.Config) (detailType, source string) {
	t.Helper()
	out, err := awssqs.NewFromConfig(cfg).ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.Seed().InterruptionQueueURL), MaxNumberOfMessages: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("ReceiveMessage: %+v, %v; want one message", out, err)
	}
	var event struct {
		DetailType string `json:"detail-type"`
		Source     string `json:"source"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &event); err != nil {
		t.Fatalf("message body is not an EventBridge event: %v", err)
	}
	return event.DetailType, event.Source
}

// TestSpotInterruptionWarnsThenReclaims checks the warning on the queue and
// the reclaim two minutes later by the endpoint's clock.
func TestSpotInterruptionWarnsThenReclaims(t *testing.T) {
	s, cfg, clk := start(t, Config{})
	id, errs := launch(t, s, cfg, "m5.large", ec2types.DefaultTargetCapacityTypeSpot)
	if id == "" {
		t.Fatalf("no spot instance: %+v", errs)
	}
	if err := s.SendSpotInterruption(id); err != nil {
		t.Fatal(err)
	}
	if dt, src := receive(t, s, cfg); dt != "EC2 Spot Instance Interruption Warning" || src != "aws.ec2" {
		t.Errorf("event %q from %q", dt, src)
	}
	clk.Step(SpotReclaimDelay - time.Second)
	if inst, _ := s.EC2().Instance(id); inst.State == ec2.StateShuttingDown || inst.State == ec2.StateTerminated {
		t.Fatalf("instance reclaimed before the two minutes passed")
	}
	reclaimed := make(chan ec2.InstanceState, 8)
	unsubscribe := s.EC2().OnInstanceChange(func(i ec2.Instance) {
		if i.ID == id {
			select {
			case reclaimed <- i.State:
			default:
			}
		}
	})
	defer unsubscribe()
	clk.Step(time.Second)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case state := <-reclaimed:
			if state == ec2.StateShuttingDown {
				return
			}
		case <-timeout:
			t.Fatalf("instance not reclaimed within 10s of the clock passing the reclaim delay")
		}
	}
}

// TestInterruptionMessages checks the other event kinds reach the queue with
// their detail-types, and that unknown instances and states are refused.
func TestInterruptionMessages(t *testing.T) {
	s, cfg, _ := start(t, Config{})
	id, errs := launch(t, s, cfg, "m5.large", ec2types.DefaultTargetCapacityTypeOnDemand)
	if id == "" {
		t.Fatalf("no instance: %+v", errs)
	}
	cases := []struct {
		send             func() error
		detailType, from string
	}{
		{func() error { return s.SendRebalanceRecommendation(id) }, "EC2 Instance Rebalance Recommendation", "aws.ec2"},
		{func() error { return s.SendScheduledChange(id) }, "AWS Health Event", "aws.health"},
		{func() error { return s.SendStateChange(id, "stopping") }, "EC2 Instance State-change Notification", "aws.ec2"},
		{func() error { return s.SendCapacityReservationInterruption(id) }, "EC2 Capacity Reservation Instance Interruption Warning", "aws.ec2"},
	}
	for _, c := range cases {
		if err := c.send(); err != nil {
			t.Fatalf("sending %s: %v", c.detailType, err)
		}
		if dt, src := receive(t, s, cfg); dt != c.detailType || src != c.from {
			t.Errorf("event %q from %q, want %q from %q", dt, src, c.detailType, c.from)
		}
	}
	if err := s.SendSpotInterruption("i-0000000000000dead"); err == nil {
		t.Errorf("a warning for an unknown instance was sent")
	}
	if err := s.SendStateChange(id, "exploded"); err == nil {
		t.Errorf("a state change to an unknown state was sent")
	}
}

// TestInsufficientCapacityReachesCreateFleet checks the fault delegates to
// EC2.
func TestInsufficientCapacityReachesCreateFleet(t *testing.T) {
	s, cfg, _ := start(t, Config{})
	s.SetInsufficientCapacity("m5.large", "us-east-1a", ec2.CapacityTypeOnDemand, true)
	id, errs := launch(t, s, cfg, "m5.large", ec2types.DefaultTargetCapacityTypeOnDemand)
	if id != "" || len(errs) != 1 || aws.ToString(errs[0].ErrorCode) != "InsufficientInstanceCapacity" {
		t.Errorf("launch into a short pool: %q, %+v; want InsufficientInstanceCapacity", id, errs)
	}
}

// TestFleetErrorReachesCreateFleet checks the fault delegates to EC2 and
// refuses codes it does not model.
func TestFleetErrorReachesCreateFleet(t *testing.T) {
	s, cfg, _ := start(t, Config{})
	if err := s.SetFleetError("m5.large", "us-east-1a", ec2.CapacityTypeSpot, "MaxSpotInstanceCountExceeded"); err != nil {
		t.Fatal(err)
	}
	id, errs := launch(t, s, cfg, "m5.large", ec2types.DefaultTargetCapacityTypeSpot)
	if id != "" || len(errs) != 1 || aws.ToString(errs[0].ErrorCode) != "MaxSpotInstanceCountExceeded" {
		t.Errorf("launch into a pool at its spot limit: %q, %+v; want MaxSpotInstanceCountExceeded", id, errs)
	}
	if err := s.SetFleetError("m5.large", "us-east-1a", ec2.CapacityTypeSpot, "NoSuchCode"); err == nil {
		t.Errorf("an unmodelled code was accepted")
	}
}
