package ec2

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// TestCreateFleetClientToken: a CreateFleet retried with its ClientToken
// and the same parameters gets the first answer and launches nothing more;
// the same token with other parameters is IdempotentParameterMismatch; a
// new token launches again; a token EC2 cannot take is refused.
func TestCreateFleetClientToken(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	lt := e.createTemplate(t, "karpenter.k8s.aws/token", e.images[0].ID)
	input := func(token, instanceType string) *ec2.CreateFleetInput {
		return &ec2.CreateFleetInput{
			Type:        ec2types.FleetTypeInstant,
			ClientToken: aws.String(token),
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: lt.LaunchTemplateName, Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(instanceType), SubnetId: aws.String(e.subnets[0].ID)}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		}
	}
	launched := func(out *ec2.CreateFleetOutput) string {
		t.Helper()
		if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
			t.Fatalf("instances: %+v errors: %+v", out.Instances, out.Errors)
		}
		return out.Instances[0].InstanceIds[0]
	}
	code := func(err error) string {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			return apiErr.ErrorCode()
		}
		return ""
	}

	first, err := e.client.CreateFleet(ctx, input("claim-uid-1", "m5.large"))
	must(t, err)
	id := launched(first)
	again, err := e.client.CreateFleet(ctx, input("claim-uid-1", "m5.large"))
	must(t, err)
	if got := launched(again); got != id || aws.ToString(again.FleetId) != aws.ToString(first.FleetId) {
		t.Errorf("retry got instance %s of fleet %s, want %s of %s", got, aws.ToString(again.FleetId), id, aws.ToString(first.FleetId))
	}
	if n := len(e.svc.Instances()); n != 1 {
		t.Fatalf("%d instances after a retried CreateFleet, want 1", n)
	}

	_, err = e.client.CreateFleet(ctx, input("claim-uid-1", "m5.xlarge"))
	if code(err) != "IdempotentParameterMismatch" {
		t.Errorf("same token, other parameters: error %v, want IdempotentParameterMismatch", err)
	}
	other, err := e.client.CreateFleet(ctx, input("claim-uid-2", "m5.large"))
	must(t, err)
	if launched(other) == id {
		t.Error("a new token got the first token's instance")
	}
	if n := len(e.svc.Instances()); n != 2 {
		t.Errorf("%d instances after a second token, want 2", n)
	}

	_, err = e.client.CreateFleet(ctx, input(strings.Repeat("x", 65), "m5.large"))
	if code(err) != "InvalidParameterValue" || !strings.Contains(err.Error(), "ClientToken") {
		t.Errorf("65-character token: error %v, want InvalidParameterValue naming ClientToken", err)
	}
	// A request that failed records no token: fixed, it launches.
	bad := input("claim-uid-3", "m5.large")
	bad.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("karpenter.k8s.aws/missing")
	if _, err := e.client.CreateFleet(ctx, bad); err == nil {
		t.Fatal("CreateFleet with a missing template succeeded")
	}
	fixed, err := e.client.CreateFleet(ctx, input("claim-uid-3", "m5.large"))
	must(t, err)
	launched(fixed)
}
