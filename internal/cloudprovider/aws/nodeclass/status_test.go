package nodeclass

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// TestSubnetStatusOrder: within a zone the subnet with the most available
// addresses comes first (a launch takes the first of each zone); ties go to
// the lower ID, so the status does not churn.
func TestSubnetStatusOrder(t *testing.T) {
	subnet := func(id, zone string, ips int32) ec2types.Subnet {
		return ec2types.Subnet{SubnetId: aws.String(id), AvailabilityZone: aws.String(zone), AvailabilityZoneId: aws.String("use1-" + zone[len(zone)-1:]), AvailableIpAddressCount: aws.Int32(ips)}
	}
	got := subnetStatus([]ec2types.Subnet{
		subnet("subnet-a1", "us-east-1a", 10),
		subnet("subnet-b1", "us-east-1b", 300),
		subnet("subnet-a2", "us-east-1a", 4000),
		subnet("subnet-a3", "us-east-1a", 4000),
		subnet("subnet-b0", "us-east-1b", 0),
	})
	want := []v1.Subnet{
		{ID: "subnet-a2", Zone: "us-east-1a", ZoneID: "use1-a"},
		{ID: "subnet-a3", Zone: "us-east-1a", ZoneID: "use1-a"},
		{ID: "subnet-a1", Zone: "us-east-1a", ZoneID: "use1-a"},
		{ID: "subnet-b1", Zone: "us-east-1b", ZoneID: "use1-b"},
		{ID: "subnet-b0", Zone: "us-east-1b", ZoneID: "use1-b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subnetStatus (-want +got):\n%s", diff)
	}
}
