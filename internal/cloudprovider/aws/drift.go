package aws

import (
	"context"
	"fmt"
	"slices"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
)

// Drift reasons, as Karpenter's AWS provider names them.
const (
	DriftNodeClass     cloudprovider.DriftReason = "NodeClassDrift"
	DriftAMI           cloudprovider.DriftReason = "AMIDrift"
	DriftSubnet        cloudprovider.DriftReason = "SubnetDrift"
	DriftSecurityGroup cloudprovider.DriftReason = "SecurityGroupDrift"
)

// IsDrifted reports why the claim's instance no longer matches its class:
// the class's static fields changed (its hash annotation differs from the
// claim's under the same hash version), or the instance's AMI, subnet or
// security groups are not what the class resolves now. A class that is not
// ready, or an instance not found, reports no drift: other controllers
// handle those.
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	if nodeClaim.Spec.NodeClassRef == nil {
		return "", nil
	}
	nc, err := c.nodeClass(ctx, nodeClaim.Spec.NodeClassRef.Name)
	if err != nil {
		if cloudprovider.IsNodeClassNotReadyError(err) {
			return "", nil
		}
		return "", err
	}
	if staticDrift(nc, nodeClaim) {
		return DriftNodeClass, nil
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", nil
	}
	inst, err := c.instances.Get(ctx, id)
	if err != nil {
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			return "", nil
		}
		return "", fmt.Errorf("getting instance of nodeclaim %s: %w", nodeClaim.Name, err)
	}
	return dynamicDrift(nc, inst), nil
}

// staticDrift compares the class's hash with the one the claim launched with.
func staticDrift(nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim) bool {
	classHash, ok1 := nc.Annotations[awsv1.AnnotationEC2NodeClassHash]
	claimHash, ok2 := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	if !ok1 || !ok2 || nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] {
		return false
	}
	return classHash != claimHash
}

// dynamicDrift compares the instance with what the class resolves now.
func dynamicDrift(nc *awsv1.EC2NodeClass, inst *instance.Instance) cloudprovider.DriftReason {
	if len(nc.Status.AMIs) > 0 && !slices.ContainsFunc(nc.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == inst.ImageID }) {
		return DriftAMI
	}
	if len(nc.Status.Subnets) > 0 && !slices.ContainsFunc(nc.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == inst.SubnetID }) {
		return DriftSubnet
	}
	if len(nc.Status.SecurityGroups) > 0 {
		want := make([]string, 0, len(nc.Status.SecurityGroups))
		for _, sg := range nc.Status.SecurityGroups {
			want = append(want, sg.ID)
		}
		have := slices.Clone(inst.SecurityGroupIDs)
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(slices.Compact(want), slices.Compact(have)) {
			return DriftSecurityGroup
		}
	}
	return ""
}
