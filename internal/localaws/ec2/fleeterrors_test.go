package ec2

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestCreateFleetReportsSetFleetErrors sets each modelled CreateFleet error
// on one pool and launches through the SDK with that pool and a second one:
// the pool is reported in errorSet with the code, EC2's message, its
// template and overrides and its lifecycle, as InsufficientInstanceCapacity
// is, and the instance comes from the other pool. Cleared, the pool
// launches again.
func TestCreateFleetReportsSetFleetErrors(t *testing.T) {
	cases := []struct {
		code     string
		capacity ec2types.DefaultTargetCapacityType
	}{
		{"MaxSpotInstanceCountExceeded", ec2types.DefaultTargetCapacityTypeSpot},
		{"VcpuLimitExceeded", ec2types.DefaultTargetCapacityTypeOnDemand},
		{"VcpuLimitExceeded", ec2types.DefaultTargetCapacityTypeSpot},
		{"UnfulfillableCapacity", ec2types.DefaultTargetCapacityTypeOnDemand},
		{"MaxFleetCountExceeded", ec2types.DefaultTargetCapacityTypeSpot},
		{"UnauthorizedOperation", ec2types.DefaultTargetCapacityTypeOnDemand},
	}
	for _, c := range cases {
		t.Run(c.code+"/"+string(c.capacity), func(t *testing.T) {
			e := newEnv(t, 1)
			lt := e.createTemplate(t, "tpl", e.images[0].ID)
			must(t, e.svc.SetFleetError("m5.large", "us-east-1a", string(c.capacity), c.code))
			// m5.large is the cheaper pool, so it is tried first.
			ovs := [][2]string{{"m5.large", e.subnets[0].ID}, {"m5.2xlarge", e.subnets[1].ID}}
			out, err := e.fleet(t, *lt.LaunchTemplateName, c.capacity, 1, ovs...)
			must(t, err)
			if len(out.Errors) != 1 {
				t.Fatalf("errors %+v, want one for m5.large in us-east-1a", out.Errors)
			}
			fe := out.Errors[0]
			o := fe.LaunchTemplateAndOverrides.Overrides
			if aws.ToString(fe.ErrorCode) != c.code || aws.ToString(fe.ErrorMessage) != fleetErrorMessages[c.code] ||
				o.InstanceType != "m5.large" || aws.ToString(o.AvailabilityZone) != "us-east-1a" || aws.ToString(o.SubnetId) != e.subnets[0].ID ||
				string(fe.Lifecycle) != string(c.capacity) ||
				aws.ToString(fe.LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateName) != "tpl" {
				t.Errorf("error item: code %q, message %q, %s in %s (subnet %s), lifecycle %s, template %s",
					aws.ToString(fe.ErrorCode), aws.ToString(fe.ErrorMessage), o.InstanceType, aws.ToString(o.AvailabilityZone),
					aws.ToString(o.SubnetId), fe.Lifecycle, aws.ToString(fe.LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateName))
			}
			if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.2xlarge" {
				t.Errorf("instances %+v, want one m5.2xlarge from the other pool", out.Instances)
			}

			must(t, e.svc.SetFleetError("m5.large", "us-east-1a", string(c.capacity), ""))
			out, err = e.fleet(t, *lt.LaunchTemplateName, c.capacity, 1, ovs...)
			must(t, err)
			if len(out.Errors) != 0 || len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.large" {
				t.Errorf("after clearing: instances %+v, errors %+v; want one m5.large", out.Instances, out.Errors)
			}
		})
	}
}

// TestSetFleetErrorRefusesUnknownCodes checks that only the modelled codes
// and capacity types are accepted.
func TestSetFleetErrorRefusesUnknownCodes(t *testing.T) {
	svc := New(Config{})
	if err := svc.SetFleetError("m5.large", "us-east-1a", CapacityTypeOnDemand, "InstanceLimitExceeded"); err == nil {
		t.Errorf("an unmodelled code was accepted")
	}
	if err := svc.SetFleetError("m5.large", "us-east-1a", "reserved", "VcpuLimitExceeded"); err == nil {
		t.Errorf("capacity type reserved was accepted")
	}
}
