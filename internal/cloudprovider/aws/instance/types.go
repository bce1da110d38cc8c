package instance

import (
	"fmt"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Tag keys the provider puts on what it launches.
const (
	TagNodePool     = "karpenter.sh/nodepool"
	TagNodeClaim    = "karpenter.sh/nodeclaim"
	TagNodeClass    = "karpenter.k8s.aws/ec2nodeclass"
	TagEKSCluster   = "eks:eks-cluster-name"
	TagName         = "Name"
	TagClusterOwned = "kubernetes.io/cluster/"
)

// ProviderIDPrefix starts every EC2 provider ID: aws:///<zone>/<instance-id>.
const ProviderIDPrefix = "aws:///"

// Instance is what the provider knows of one EC2 instance.
type Instance struct {
	// ID is the instance ID, i-....
	ID string
	// Type is the instance type, e.g. m5.large.
	Type string
	// Zone is the availability zone.
	Zone string
	// SubnetID is the subnet the instance runs in.
	SubnetID string
	// ImageID is the AMI the instance booted.
	ImageID string
	// CapacityType is spot, on-demand or reserved.
	CapacityType string
	// CapacityReservationID is the capacity reservation of a reserved
	// instance, and CapacityReservationType its type (default or
	// capacity-block; known only for instances this process launched).
	CapacityReservationID, CapacityReservationType string
	// State is the EC2 state name: pending, running, stopping, stopped,
	// shutting-down or terminated.
	State string
	// LaunchTime is when EC2 launched it.
	LaunchTime time.Time
	// SecurityGroupIDs are the groups of its primary network interface.
	SecurityGroupIDs []string
	// Tags are the instance's tags.
	Tags map[string]string
}

// ProviderID returns aws:///<zone>/<id>, the Node's spec.providerID.
func (i *Instance) ProviderID() string { return ProviderIDPrefix + i.Zone + "/" + i.ID }

// ParseProviderID returns the instance ID in an aws:///<zone>/<id> provider ID.
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return "", fmt.Errorf("provider id %q does not start with %s", providerID, ProviderIDPrefix)
	}
	_, id, ok := strings.Cut(rest, "/")
	if !ok || !strings.HasPrefix(id, "i-") || strings.Contains(id, "/") {
		return "", fmt.Errorf("provider id %q is not %s<zone>/<instance-id>", providerID, ProviderIDPrefix)
	}
	return id, nil
}

// fromEC2 converts a described instance.
func fromEC2(in ec2types.Instance) *Instance {
	out := &Instance{
		ID:           deref(in.InstanceId),
		Type:         string(in.InstanceType),
		SubnetID:     deref(in.SubnetId),
		ImageID:      deref(in.ImageId),
		CapacityType: "on-demand",
		Tags:         map[string]string{},
	}
	if in.Placement != nil {
		out.Zone = deref(in.Placement.AvailabilityZone)
	}
	if in.State != nil {
		out.State = string(in.State.Name)
	}
	if in.LaunchTime != nil {
		out.LaunchTime = *in.LaunchTime
	}
	if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		out.CapacityType = "spot"
	}
	if in.CapacityReservationId != nil && *in.CapacityReservationId != "" {
		out.CapacityType = "reserved"
		out.CapacityReservationID = *in.CapacityReservationId
	}
	for _, g := range in.SecurityGroups {
		out.SecurityGroupIDs = append(out.SecurityGroupIDs, deref(g.GroupId))
	}
	for _, t := range in.Tags {
		out.Tags[deref(t.Key)] = deref(t.Value)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
