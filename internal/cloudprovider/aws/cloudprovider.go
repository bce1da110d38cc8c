package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/launchtemplate"
)

// NodeClassGVK is the kind of NodeClass the provider supports.
func NodeClassGVK() schema.GroupVersionKind {
	return awsv1.SchemeGroupVersion.WithKind("EC2NodeClass")
}

// InstanceTypeProvider lists the instance types a class can launch, with
// offerings (zones of the class's subnets, capacity types, prices,
// availability).
type InstanceTypeProvider interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error)
}

// CloudProvider launches EC2 instances. Build it with New.
type CloudProvider struct {
	kubeClient      client.Client
	clock           clock.Clock
	cluster         launchtemplate.Cluster
	instanceTypes   InstanceTypeProvider
	launchTemplates *launchtemplate.Provider
	instances       *instance.Provider
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New composes the provider from its parts.
func New(kubeClient client.Client, clk clock.Clock, cluster launchtemplate.Cluster, instanceTypes InstanceTypeProvider,
	launchTemplates *launchtemplate.Provider, instances *instance.Provider) *CloudProvider {
	return &CloudProvider{
		kubeClient: kubeClient, clock: clk, cluster: cluster, instanceTypes: instanceTypes,
		launchTemplates: launchTemplates, instances: instances,
	}
}

// Name returns "aws".
func (c *CloudProvider) Name() string { return "aws" }

// GetSupportedNodeClasses returns the EC2NodeClass kind.
func (c *CloudProvider) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{NodeClassGVK()}
}

// RepairPolicies are the node conditions that get a node replaced, as
// Karpenter's AWS provider declares them: the kubelet's Ready False or
// Unknown for 30 minutes, and the conditions the EKS node monitoring agent
// sets: AcceleratedHardwareReady False (a failed GPU or Neuron device) for
// 10 minutes, StorageReady, NetworkingReady, KernelReady and
// ContainerRuntimeReady False for 30 minutes.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	policy := func(condition string, status metav1.ConditionStatus, toleration time.Duration) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: condition, ConditionStatus: status, TolerationDuration: toleration}
	}
	return []cloudprovider.RepairPolicy{
		policy(string(corev1.NodeReady), metav1.ConditionFalse, 30*time.Minute),
		policy(string(corev1.NodeReady), metav1.ConditionUnknown, 30*time.Minute),
		policy(ConditionAcceleratedHardwareReady, metav1.ConditionFalse, 10*time.Minute),
		policy(ConditionStorageReady, metav1.ConditionFalse, 30*time.Minute),
		policy(ConditionNetworkingReady, metav1.ConditionFalse, 30*time.Minute),
		policy(ConditionKernelReady, metav1.ConditionFalse, 30*time.Minute),
		policy(ConditionContainerRuntimeReady, metav1.ConditionFalse, 30*time.Minute),
	}
}

// Node conditions the EKS node monitoring agent sets, which RepairPolicies
// repairs on.
const (
	ConditionAcceleratedHardwareReady = "AcceleratedHardwareReady"
	ConditionStorageReady             = "StorageReady"
	ConditionNetworkingReady          = "NetworkingReady"
	ConditionKernelReady              = "KernelReady"
	ConditionContainerRuntimeReady    = "ContainerRuntimeReady"
)

// GetInstanceTypes returns the instance types of the NodePool's
// EC2NodeClass that one of the class's resolved AMIs suits (the others
// could not launch). A class that does not exist or is not Ready has none.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return nil, nil
	}
	nc, err := c.nodeClass(ctx, ref.Name)
	if err != nil {
		if cloudprovider.IsNodeClassNotReadyError(err) {
			return nil, nil
		}
		return nil, err
	}
	its, err := c.instanceTypes.List(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("listing instance types of ec2nodeclass %s: %w", nc.Name, err)
	}
	return its, nil
}

// Get returns the claim of the instance with the given provider ID.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := c.instances.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.toNodeClaim(inst), nil
}

// List returns a claim for every live instance the cluster's NodePools
// launched.
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	instances, err := c.instances.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*karpv1.NodeClaim, 0, len(instances))
	for _, inst := range instances {
		out = append(out, c.toNodeClaim(inst))
	}
	return out, nil
}

// Delete terminates the claim's instance; it returns a
// NodeClaimNotFoundError once the instance is gone.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err))
	}
	return c.instances.Delete(ctx, id)
}

// nodeClass returns the named EC2NodeClass, or a NodeClassNotReadyError if
// it does not exist, is being deleted or is not Ready.
func (c *CloudProvider) nodeClass(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q not found", name))
		}
		return nil, fmt.Errorf("getting ec2nodeclass %s: %w", name, err)
	}
	if nc.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q is being deleted", name))
	}
	ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		msg := "has no Ready condition yet"
		if ready != nil {
			msg = fmt.Sprintf("is not ready: %s", ready.Message)
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q %s", name, msg))
	}
	return nc, nil
}

// toNodeClaim describes an instance as a claim: enough for garbage
// collection and liveness (provider ID, launch time, pool, type, zone,
// capacity type, class).
func (c *CloudProvider) toNodeClaim(inst *instance.Instance) *karpv1.NodeClaim {
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: inst.Type,
		corev1.LabelTopologyZone:       inst.Zone,
		karpv1.CapacityTypeLabelKey:    inst.CapacityType,
	}
	if pool, ok := inst.Tags[instance.TagNodePool]; ok {
		labels[karpv1.NodePoolLabelKey] = pool
	}
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              inst.Tags[instance.TagNodeClaim],
			Labels:            labels,
			CreationTimestamp: metav1.NewTime(inst.LaunchTime),
		},
		Status: karpv1.NodeClaimStatus{ProviderID: inst.ProviderID(), ImageID: inst.ImageID},
	}
	if class, ok := inst.Tags[instance.TagNodeClass]; ok {
		gvk := NodeClassGVK()
		nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: gvk.Group, Kind: gvk.Kind, Name: class}
	}
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if key == karpv1.NodePoolLabelKey {
			continue
		}
		nc.Spec.Requirements = append(nc.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{labels[key]},
		})
	}
	return nc
}
