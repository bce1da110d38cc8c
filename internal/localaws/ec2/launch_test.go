package ec2

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

func TestLaunchSmoke(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	lt := e.createTemplate(t, "karpenter.k8s.aws/123", e.images[0].ID)
	out, err := e.fleet(t, *lt.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, 1,
		[2]string{"m5.xlarge", e.subnets[0].ID}, [2]string{"m5.large", e.subnets[1].ID})
	must(t, err)
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("instances: %+v errors: %+v", out.Instances, out.Errors)
	}
	if got := string(out.Instances[0].InstanceType); got != "m5.large" {
		t.Errorf("launched %s, want the cheaper m5.large", got)
	}
	id := out.Instances[0].InstanceIds[0]
	di, err := e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	must(t, err)
	in := di.Reservations[0].Instances[0]
	got := []string{aws.ToString(in.InstanceId), string(in.State.Name), string(in.InstanceType), aws.ToString(in.Placement.AvailabilityZone), aws.ToString(in.SubnetId), aws.ToString(in.ImageId), aws.ToString(in.PrivateDnsName)}
	want := []string{id, "pending", "m5.large", "us-east-1b", e.subnets[1].ID, e.images[0].ID, "ip-10-0-2-4.ec2.internal"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instance (-want +got):\n%s", diff)
	}
}
