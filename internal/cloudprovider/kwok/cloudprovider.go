package kwok

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

// NodeClassGVK is the kind of NodeClass the provider supports.
func NodeClassGVK() schema.GroupVersionKind {
	return kwokv1alpha1.SchemeGroupVersion.WithKind("KWOKNodeClass")
}

// CloudProvider launches EC2-shaped instances that are Node objects played by
// kwok. It is safe for concurrent use. Build it with New.
type CloudProvider struct {
	kubeClient client.Client
	clock      clock.Clock
	partition  string
	// instanceTypes is the chosen set (Options.InstanceTypes), sorted by name, all
	// offerings available. It is shared read-only; byName indexes it.
	instanceTypes []*cloudprovider.InstanceType
	byName        map[string]*cloudprovider.InstanceType

	mu                   sync.Mutex
	launchDelay          time.Duration
	registrationDelay    time.Duration
	insufficientCapacity func(OfferingID) bool
	// unavailable maps offerings that failed with insufficient capacity to
	// when they become available again.
	unavailable map[OfferingID]time.Time
	// view is instanceTypes with the unavailable offerings marked, rebuilt
	// when unavailable changes; nil means stale.
	view []*cloudprovider.InstanceType
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New builds a provider that reads and writes Nodes and reads KWOKNodeClasses
// through kubeClient, and measures delays and cache lifetimes with clk.
func New(kubeClient client.Client, clk clock.Clock, opts Options) (*CloudProvider, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("validating kwok provider options: %w", err)
	}
	instanceTypes, err := loadInstanceTypes(opts)
	if err != nil {
		return nil, err
	}
	c := &CloudProvider{
		kubeClient:           kubeClient,
		clock:                clk,
		partition:            opts.Partition,
		instanceTypes:        instanceTypes,
		launchDelay:          opts.LaunchDelay,
		registrationDelay:    opts.RegistrationDelay,
		insufficientCapacity: opts.InsufficientCapacity,
		unavailable:          map[OfferingID]time.Time{},
	}
	if c.partition == "" {
		c.partition = DefaultPartition
	}
	c.byName = make(map[string]*cloudprovider.InstanceType, len(c.instanceTypes))
	for _, it := range c.instanceTypes {
		c.byName[it.Name] = it
	}
	return c, nil
}

// loadInstanceTypes builds the set opts picks, sorted by name.
func loadInstanceTypes(opts Options) ([]*cloudprovider.InstanceType, error) {
	if opts.InstanceTypes == InstanceTypesKarpenterKWOK {
		return KarpenterKWOKInstanceTypes(), nil
	}
	catalogOpts := catalog.DefaultOptions()
	if opts.Catalog != nil {
		catalogOpts = *opts.Catalog
	}
	its, err := catalog.Load(catalogOpts)
	if err != nil {
		return nil, fmt.Errorf("loading instance types: %w", err)
	}
	return ec2types.FromCatalog(its), nil
}

// SetLaunchDelay changes Options.LaunchDelay for the following launches.
func (c *CloudProvider) SetLaunchDelay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.launchDelay = d
}

// SetRegistrationDelay changes Options.RegistrationDelay for the following launches.
func (c *CloudProvider) SetRegistrationDelay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registrationDelay = d
}

// SetInsufficientCapacity changes Options.InsufficientCapacity for the
// following launches; nil injects no failures.
func (c *CloudProvider) SetInsufficientCapacity(fail func(OfferingID) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.insufficientCapacity = fail
}

// Partition returns the partition whose Nodes the provider launches and reports.
func (c *CloudProvider) Partition() string { return c.partition }

// Delete terminates the claim's instance: it deletes its Node. It returns a
// NodeClaimNotFoundError once the Node is gone or being deleted, which is at
// once unless the delete call fails: a Node with a deletionTimestamp no
// longer counts as an instance. An instance still booting has no Node; its
// claim is being deleted (that is when the core calls Delete), and the
// RegistrationController creates no Node for such a claim, so it is gone too.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	name, ok := nodeName(nodeClaim.Status.ProviderID)
	if !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("nodeclaim %s has no kwok provider ID (%q)", nodeClaim.Name, nodeClaim.Status.ProviderID))
	}
	node, err := c.instance(ctx, name)
	if err != nil {
		return err
	}
	err = c.kubeClient.Delete(ctx, node, client.Preconditions{UID: &node.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s of nodeclaim %s: %w", name, nodeClaim.Name, err)
	}
	log.FromContext(ctx).V(1).Info("Deleted instance", "NodeClaim", klog.KObj(nodeClaim), "Node", klog.KObj(node))
	return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s terminated", nodeClaim.Status.ProviderID))
}

// Get returns a claim describing the instance with the given provider ID:
// its Node, or, while it boots, its NodeClaim. It returns a
// NodeClaimNotFoundError if there is no such instance in the provider's
// partition or it is being deleted.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	name, ok := nodeName(providerID)
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("%q is not a kwok provider ID", providerID))
	}
	node, err := c.lookupNode(ctx, name)
	if err != nil {
		return nil, err
	}
	if node != nil {
		if err := c.live(node); err != nil {
			return nil, err
		}
		return toNodeClaim(node), nil
	}
	// No Node: perhaps the instance is still booting.
	nodeClaim := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nodeClaim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no node or booting instance %s", name))
		}
		return nil, fmt.Errorf("getting nodeclaim %s: %w", name, err)
	}
	if !c.booting(nodeClaim) || nodeClaim.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no node or booting instance %s", name))
	}
	return nodeClaim, nil
}

// List returns a claim for every instance of the provider's partition,
// running (from its Node) or booting (its NodeClaim), ordered by name, so
// that garbage collection can find instances that have no NodeClaim. Nodes
// and claims being deleted are left out.
func (c *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	inPartition := client.MatchingLabels{PartitionLabelKey: c.partition}
	nodes := &corev1.NodeList{}
	var nodeOpts []client.ListOption
	if c.partition != DefaultPartition {
		nodeOpts = append(nodeOpts, inPartition)
	}
	// The default partition also has the Nodes Karpenter's kwok provider
	// launched (a cluster taken over from it keeps its nodes); a selector
	// cannot say "this partition or no partition but Karpenter's label", so
	// one unfiltered list is filtered by c.inPartition below.
	if err := c.kubeClient.List(ctx, nodes, nodeOpts...); err != nil {
		return nil, fmt.Errorf("listing nodes of partition %s: %w", c.partition, err)
	}
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims, inPartition, client.HasLabels{RegisterAfterLabelKey}); err != nil {
		return nil, fmt.Errorf("listing booting nodeclaims of partition %s: %w", c.partition, err)
	}
	var out []*v1.NodeClaim
	hasNode := map[string]bool{}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if !c.inPartition(node) {
			continue
		}
		hasNode[node.Name] = true
		if c.live(node) == nil {
			out = append(out, toNodeClaim(node))
		}
	}
	for i := range claims.Items {
		nodeClaim := &claims.Items[i]
		if !hasNode[nodeClaim.Name] && nodeClaim.DeletionTimestamp == nil && c.booting(nodeClaim) {
			out = append(out, nodeClaim)
		}
	}
	sortByName(out)
	return out, nil
}

// IsDrifted reports no drift: a kwok instance's shape comes from the catalog
// compiled into the binary and its NodeClass has no field an instance could
// drift from (the registration delay only matters at launch).
func (c *CloudProvider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// RepairPolicies replaces nodes whose Ready condition has been False or
// Unknown for 10 minutes, as Karpenter's kwok provider does.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: string(corev1.NodeReady), ConditionStatus: metav1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: string(corev1.NodeReady), ConditionStatus: metav1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
	}
}

// Name returns "kwok".
func (c *CloudProvider) Name() string { return "kwok" }

// GetSupportedNodeClasses returns the KWOKNodeClass kind.
func (c *CloudProvider) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{NodeClassGVK()}
}

// instance returns the provider's live Node with the given name, or a
// NodeClaimNotFoundError if there is none: absent, of another partition or
// provider, or being deleted.
func (c *CloudProvider) instance(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := c.lookupNode(ctx, name)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s not found", name))
	}
	if err := c.live(node); err != nil {
		return nil, err
	}
	return node, nil
}

// lookupNode returns the Node with the given name, or nil if there is none.
func (c *CloudProvider) lookupNode(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	return node, nil
}

// live returns a NodeClaimNotFoundError unless the Node is an instance of
// the provider's partition that is not being deleted.
func (c *CloudProvider) live(node *corev1.Node) error {
	if !c.owns(node) {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s was not launched by the kwok provider of partition %s", node.Name, c.partition))
	}
	if node.DeletionTimestamp != nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s is being deleted", node.Name))
	}
	return nil
}

// owns reports whether the node was launched by a provider of c's
// partition. Nodes that Karpenter's kwok provider launched (they carry its
// KarpenterKWOKPartitionLabelKey and not PartitionLabelKey) belong to the
// default partition, so that Dovetail takes over a cluster Karpenter's kwok
// provider ran.
func (c *CloudProvider) owns(node *corev1.Node) bool {
	return node.Spec.ProviderID == ProviderIDPrefix+node.Name && c.inPartition(node)
}

// inPartition reports whether the node's labels place it in c's partition:
// its PartitionLabelKey, or, for the default partition, Karpenter's
// KarpenterKWOKPartitionLabelKey without ours.
func (c *CloudProvider) inPartition(node *corev1.Node) bool {
	if partition, ok := node.Labels[PartitionLabelKey]; ok {
		return partition == c.partition
	}
	_, karpenter := node.Labels[KarpenterKWOKPartitionLabelKey]
	return karpenter && c.partition == DefaultPartition
}

// nodeName returns the Node name in a kwok provider ID.
func nodeName(providerID string) (string, bool) {
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	return name, ok && name != ""
}

// toNodeClaim describes a Node as the claim of its instance: name, labels,
// provider ID, capacity and allocatable, the NodeClass it was launched with,
// and the instance type, zone and capacity type as requirements.
func toNodeClaim(node *corev1.Node) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Name,
			Labels:            maps.Clone(node.Labels),
			CreationTimestamp: node.CreationTimestamp,
		},
		Status: v1.NodeClaimStatus{
			NodeName:    node.Name,
			ProviderID:  node.Spec.ProviderID,
			Capacity:    node.Status.Capacity.DeepCopy(),
			Allocatable: node.Status.Allocatable.DeepCopy(),
		},
	}
	if name := node.Annotations[NodeClassAnnotationKey]; name != "" {
		gvk := NodeClassGVK()
		nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: gvk.Group, Kind: gvk.Kind, Name: name}
	}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1.CapacityTypeLabelKey} {
		if value, ok := node.Labels[key]; ok {
			nc.Spec.Requirements = append(nc.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value},
			})
		}
	}
	return nc
}

// sortByName orders claims by name.
func sortByName(ncs []*v1.NodeClaim) {
	slices.SortFunc(ncs, func(a, b *v1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
}
