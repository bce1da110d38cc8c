package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// NodeClassGVK is the NodeClass kind the fake provider supports.
func NodeClassGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "karpenter.test.sh", Version: "v1alpha1", Kind: "TestNodeClass"}
}

// CloudProvider is an in-memory CloudProvider. Configure its exported fields
// before handing it to the code under test, or under Lock/Unlock while that
// code runs; read the recorded calls the same way. Every method is safe for
// concurrent use.
type CloudProvider struct {
	mu sync.Mutex

	// InstanceTypes are returned for every NodePool not in InstanceTypesForNodePool.
	InstanceTypes []*cloudprovider.InstanceType
	// InstanceTypesForNodePool overrides InstanceTypes per NodePool name.
	InstanceTypesForNodePool map[string][]*cloudprovider.InstanceType

	// NextCreateErr, if set, is returned by the next Create, then cleared.
	NextCreateErr error
	// NextDeleteErr, if set, is returned by the next Delete, then cleared.
	NextDeleteErr error
	// NextGetErr, if set, is returned by the next Get, then cleared.
	NextGetErr error
	// NextGetInstanceTypesErr, if set, is returned by the next GetInstanceTypes, then cleared.
	NextGetInstanceTypesErr error
	// Drifted is what IsDrifted reports for every claim.
	Drifted cloudprovider.DriftReason
	// Policies is what RepairPolicies returns.
	Policies []cloudprovider.RepairPolicy

	// CreateCalls records the claims passed to Create, in order.
	CreateCalls []*v1.NodeClaim
	// DeleteCalls records the claims passed to Delete, in order.
	DeleteCalls []*v1.NodeClaim
	// GetCalls records the provider IDs passed to Get, in order.
	GetCalls []string

	// created holds the launched instances by provider ID.
	created map[string]*v1.NodeClaim
	nextID  int
}

// NewCloudProvider returns an empty provider that repairs nodes whose Ready
// condition has been False or Unknown for 10 minutes.
func NewCloudProvider() *CloudProvider {
	return &CloudProvider{
		created: map[string]*v1.NodeClaim{},
		Policies: []cloudprovider.RepairPolicy{
			{ConditionType: string(corev1.NodeReady), ConditionStatus: metav1.ConditionFalse, TolerationDuration: 10 * time.Minute},
			{ConditionType: string(corev1.NodeReady), ConditionStatus: metav1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
		},
	}
}

// Lock locks the provider so a test can change or read its fields while other
// goroutines use it.
func (c *CloudProvider) Lock() { c.mu.Lock() }

// Unlock undoes Lock.
func (c *CloudProvider) Unlock() { c.mu.Unlock() }

// Reset forgets launched instances, recorded calls and injected errors.
func (c *CloudProvider) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = map[string]*v1.NodeClaim{}
	c.CreateCalls, c.DeleteCalls, c.GetCalls = nil, nil, nil
	c.NextCreateErr, c.NextDeleteErr, c.NextGetErr, c.NextGetInstanceTypesErr = nil, nil, nil, nil
	c.Drifted = ""
}

// Create launches the cheapest available offering of an instance type that the
// claim's requirements allow and whose allocatable fits its requests.
func (c *CloudProvider) Create(_ context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.CreateCalls = append(c.CreateCalls, nodeClaim.DeepCopy())
	if err := c.NextCreateErr; err != nil {
		c.NextCreateErr = nil
		return nil, err
	}
	reqs, err := requirements.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		return nil, cloudprovider.NewCreateError(fmt.Errorf("parsing requirements: %w", err), "InvalidRequirements", err.Error())
	}
	it, offering, ok := c.cheapest(nodeClaim.Labels[v1.NodePoolLabelKey], reqs, nodeClaim.Spec.Resources.Requests)
	if !ok {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no offering satisfies %s", reqs))
	}
	c.nextID++
	out := nodeClaim.DeepCopy()
	out.Status.ProviderID = fmt.Sprintf("fake://%d", c.nextID)
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable().DeepCopy()
	labels := map[string]string{}
	maps.Copy(labels, reqs.Labels())
	maps.Copy(labels, out.Labels)
	labels[corev1.LabelInstanceTypeStable] = it.Name
	labels[corev1.LabelTopologyZone] = offering.Zone
	labels[v1.CapacityTypeLabelKey] = offering.CapacityType
	out.Labels = labels
	c.created[out.Status.ProviderID] = out.DeepCopy()
	return out, nil
}

func (c *CloudProvider) cheapest(pool string, reqs requirements.Requirements, requests corev1.ResourceList) (*cloudprovider.InstanceType, cloudprovider.Offering, bool) {
	var bestType *cloudprovider.InstanceType
	var best cloudprovider.Offering
	offeringKeys := []string{corev1.LabelTopologyZone, v1.CapacityTypeLabelKey}
	for _, it := range c.instanceTypes(pool) {
		if it.Requirements.Without(offeringKeys...).Intersects(reqs) != nil || !fits(requests, it.Allocatable()) {
			continue
		}
		o, ok := it.CheapestOffering(func(o cloudprovider.Offering) bool {
			return allows(reqs, corev1.LabelTopologyZone, o.Zone) && allows(reqs, v1.CapacityTypeLabelKey, o.CapacityType)
		})
		if ok && (bestType == nil || o.Price < best.Price || (o.Price == best.Price && it.Name < bestType.Name)) {
			bestType, best = it, o
		}
	}
	return bestType, best, bestType != nil
}

func allows(reqs requirements.Requirements, key, value string) bool {
	r, ok := reqs.Get(key)
	return !ok || r.Has(value)
}

func fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		have := allocatable[name]
		if have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

func (c *CloudProvider) instanceTypes(pool string) []*cloudprovider.InstanceType {
	if its, ok := c.InstanceTypesForNodePool[pool]; ok {
		return its
	}
	return c.InstanceTypes
}

// Delete terminates the claim's instance. It returns a NodeClaimNotFoundError
// when there is no such instance.
func (c *CloudProvider) Delete(_ context.Context, nodeClaim *v1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.DeleteCalls = append(c.DeleteCalls, nodeClaim.DeepCopy())
	if err := c.NextDeleteErr; err != nil {
		c.NextDeleteErr = nil
		return err
	}
	id := nodeClaim.Status.ProviderID
	if _, ok := c.created[id]; !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q does not exist", id))
	}
	delete(c.created, id)
	return nil
}

// Get returns the launched instance with the given provider ID.
func (c *CloudProvider) Get(_ context.Context, providerID string) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.GetCalls = append(c.GetCalls, providerID)
	if err := c.NextGetErr; err != nil {
		c.NextGetErr = nil
		return nil, err
	}
	nc, ok := c.created[providerID]
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q does not exist", providerID))
	}
	return nc.DeepCopy(), nil
}

// List returns every launched instance, ordered by provider ID.
func (c *CloudProvider) List(context.Context) ([]*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := slices.Sorted(maps.Keys(c.created))
	out := make([]*v1.NodeClaim, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.created[id].DeepCopy())
	}
	return out, nil
}

// GetInstanceTypes returns the instance types configured for the NodePool.
func (c *CloudProvider) GetInstanceTypes(_ context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.NextGetInstanceTypesErr; err != nil {
		c.NextGetInstanceTypesErr = nil
		return nil, err
	}
	if nodePool == nil {
		return nil, errors.New("nodepool is nil")
	}
	return slices.Clone(c.instanceTypes(nodePool.Name)), nil
}

// IsDrifted reports the configured drift reason.
func (c *CloudProvider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Drifted, nil
}

// RepairPolicies returns the configured policies.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.Policies)
}

// Name returns "fake".
func (c *CloudProvider) Name() string { return "fake" }

// GetSupportedNodeClasses returns NodeClassGVK.
func (c *CloudProvider) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{NodeClassGVK()}
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)
