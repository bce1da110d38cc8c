package kwok

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/overlay"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Create launches the claim's instance, of the cheapest available offering
// that the claim's requirements allow and whose instance type's allocatable
// fits the claim's requests. The instance is a Node named after the claim,
// handed to kwok. It returns the claim with the instance's provider ID,
// capacity, allocatable and labels (instance type, zone, capacity type,
// every instance-type label and the partition).
//
// With a registration delay the Node does not exist yet: the returned claim
// carries RegisterAfterLabelKey, and the RegistrationController creates the
// Node at that time from the claim the core stored.
//
// Create is idempotent: a claim whose instance exists (or is booting) gets
// it back. It fails with a NodeClassNotReadyError when the claim's
// KWOKNodeClass is missing or not Ready, and with an
// InsufficientCapacityError when no offering fits or every fitting one
// fails (each failure is remembered for UnavailableOfferingTTL, see
// GetInstanceTypes).
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	logger := log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim))
	// 1. A claim that already has an instance gets it back.
	existing, err := c.existingInstance(ctx, nodeClaim.Name)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		return fillClaim(nodeClaim, existing), nil
	}
	if c.booting(nodeClaim) {
		return nodeClaim.DeepCopy(), nil
	}
	// 2. The claim's KWOKNodeClass must exist and be Ready.
	nodeClass, err := c.readyNodeClass(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	reqs, err := requirements.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		err = fmt.Errorf("parsing requirements of nodeclaim %s: %w", nodeClaim.Name, err)
		return nil, cloudprovider.NewCreateError(err, "InvalidRequirements", err.Error())
	}
	launchDelay, registrationDelay := c.delays()
	if d := nodeClass.Spec.NodeRegistrationDelay; d != nil {
		registrationDelay = d.Duration
	}
	// 3. Launching takes LaunchDelay, like a cloud API call.
	if err := c.sleep(ctx, launchDelay); err != nil {
		return nil, fmt.Errorf("launching instance for nodeclaim %s: %w", nodeClaim.Name, err)
	}
	// 4. Take the cheapest offering that does not fail.
	chosen, err := c.launch(ctx, reqs, nodeClaim.Spec.Resources.Requests)
	if err != nil {
		return nil, fmt.Errorf("launching instance for nodeclaim %s: %w", nodeClaim.Name, err)
	}
	node := newNode(nodeClaim, reqs, chosen, c.partition)
	logger = logger.WithValues("instance-type", chosen.instanceType.Name, "zone", chosen.offering.Zone,
		"capacity-type", chosen.offering.CapacityType, "price", chosen.offering.Price)
	// 5. A booting instance is recorded on the claim; its Node comes later.
	if registrationDelay > 0 {
		out := fillClaim(nodeClaim, node)
		registerAfter := c.clock.Now().Add(registrationDelay)
		out.Labels[RegisterAfterLabelKey] = formatRegisterAfter(registerAfter)
		logger.V(1).Info("Launched instance", "register-after", registerAfter.UTC().Format(time.RFC3339Nano))
		return out, nil
	}
	// 6. Otherwise the Node exists at once.
	if err := c.kubeClient.Create(ctx, node); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating node for nodeclaim %s: %w", nodeClaim.Name, err)
		}
		// A concurrent Create for the same claim won the race.
		existing, err := c.existingInstance(ctx, nodeClaim.Name)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, fmt.Errorf("creating node for nodeclaim %s: node exists, then vanished", nodeClaim.Name)
		}
		return fillClaim(nodeClaim, existing), nil
	}
	logger.V(1).Info("Launched instance", "Node", klog.KObj(node))
	return fillClaim(nodeClaim, node), nil
}

// booting reports whether the claim records an instance of this provider
// that is waiting for its registration delay: the core stored the claim
// Create returned, with its provider ID and RegisterAfterLabelKey, and has
// not registered a Node for it. Once the core has (status.nodeName or
// Registered=True), the instance is its Node, never to be made again.
func (c *CloudProvider) booting(nodeClaim *v1.NodeClaim) bool {
	_, delayed := nodeClaim.Labels[RegisterAfterLabelKey]
	return delayed && nodeClaim.Labels[PartitionLabelKey] == c.partition &&
		nodeClaim.Status.ProviderID == ProviderIDPrefix+nodeClaim.Name &&
		nodeClaim.Status.NodeName == "" &&
		!meta.IsStatusConditionTrue(nodeClaim.Status.Conditions, v1.ConditionTypeRegistered)
}

// existingInstance returns the provider's Node named name, nil if there is
// none, or an error if the name is taken by a Node that is not the
// provider's or that is being deleted.
func (c *CloudProvider) existingInstance(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	if !c.owns(node) {
		err := fmt.Errorf("node %s exists and was not launched by the kwok provider of partition %s", name, c.partition)
		return nil, cloudprovider.NewCreateError(err, "NodeNameConflict", err.Error())
	}
	if node.DeletionTimestamp != nil {
		return nil, fmt.Errorf("node %s of a previous launch is being deleted", name)
	}
	return node, nil
}

// readyNodeClass returns the claim's KWOKNodeClass, or a
// NodeClassNotReadyError if the claim references another kind, or the class
// is missing, being deleted or not Ready.
func (c *CloudProvider) readyNodeClass(ctx context.Context, nodeClaim *v1.NodeClaim) (*kwokv1alpha1.KWOKNodeClass, error) {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclaim %s has no nodeClassRef", nodeClaim.Name))
	}
	gvk := NodeClassGVK()
	// A group may carry a version suffix ("karpenter.kwok.sh/v1alpha1").
	if group, _, _ := strings.Cut(ref.Group, "/"); group != gvk.Group || ref.Kind != gvk.Kind {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclaim %s references a %s of group %s; the kwok provider launches only %s of group %s",
			nodeClaim.Name, ref.Kind, ref.Group, gvk.Kind, gvk.Group))
	}
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %s not found", ref.Name))
		}
		return nil, fmt.Errorf("getting KWOKNodeClass %s: %w", ref.Name, err)
	}
	if nodeClass.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %s is being deleted", ref.Name))
	}
	ready := meta.FindStatusCondition(nodeClass.Status.Conditions, kwokv1alpha1.ConditionTypeReady)
	switch {
	case ready == nil:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %s has no Ready condition yet", ref.Name))
	case ready.Status != metav1.ConditionTrue:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %s is not ready (%s): %s", ref.Name, ready.Reason, ready.Message))
	}
	return nodeClass, nil
}

// delays returns the configured launch and registration delays.
func (c *CloudProvider) delays() (launch, registration time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.launchDelay, c.registrationDelay
}

// sleep waits d on the provider's clock, or until ctx ends.
func (c *CloudProvider) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := c.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting %s: %w", d, context.Cause(ctx))
	}
}

// launch returns the cheapest candidate that does not fail with injected
// insufficient capacity, marking each one that does unavailable. Like an EC2
// fleet request, one launch tries every candidate in price order.
func (c *CloudProvider) launch(ctx context.Context, reqs requirements.Requirements, requests corev1.ResourceList) (candidate, error) {
	// The NodeOverlays of the claim's NodePool, when the overlay decorator
	// launches: the cheapest by the overlaid price, the overlaid capacity.
	cands := candidates(overlay.InstanceTypes(ctx, c.instanceTypeView()), reqs, requests)
	if len(cands) == 0 {
		return candidate{}, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no available offering satisfies requirements [%s] and requests %s", reqs, describe(requests)))
	}
	c.mu.Lock()
	fail := c.insufficientCapacity
	c.mu.Unlock()
	for _, cand := range cands {
		id := cand.id()
		if fail != nil && fail(id) {
			c.markUnavailable(ctx, id)
			continue
		}
		return cand, nil
	}
	return candidate{}, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("all %d offerings that satisfy the claim are out of capacity", len(cands)))
}

// candidate is an instance type and one of its offerings.
type candidate struct {
	instanceType *cloudprovider.InstanceType
	offering     cloudprovider.Offering
}

// id names the candidate's offering.
func (cand candidate) id() OfferingID {
	return OfferingID{InstanceType: cand.instanceType.Name, Zone: cand.offering.Zone, CapacityType: cand.offering.CapacityType}
}

// candidates returns every available offering, among its (sorted by name),
// that reqs allow and whose instance type's allocatable fits requests,
// cheapest first; ties go to the instance type, zone and capacity type that
// sort first, so that the choice is deterministic.
func candidates(its []*cloudprovider.InstanceType, reqs requirements.Requirements, requests corev1.ResourceList) []candidate {
	// A claim normally lists its instance types; look only at those.
	if r, ok := reqs.Get(corev1.LabelInstanceTypeStable); ok && r.Finite() {
		listed := make([]*cloudprovider.InstanceType, 0, r.Len())
		for _, name := range r.Values() {
			if i, found := slices.BinarySearchFunc(its, name, func(it *cloudprovider.InstanceType, n string) int { return strings.Compare(it.Name, n) }); found {
				listed = append(listed, its[i])
			}
		}
		its = listed
	}
	zones, hasZones := reqs.Get(corev1.LabelTopologyZone)
	capacityTypes, hasCapacityTypes := reqs.Get(v1.CapacityTypeLabelKey)
	typeReqs := reqs.Without(corev1.LabelTopologyZone, v1.CapacityTypeLabelKey).List()
	var out []candidate
	for _, it := range its {
		if !compatible(it.Requirements, typeReqs) || !fits(requests, it.Allocatable()) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || (hasZones && !zones.Has(o.Zone)) || (hasCapacityTypes && !capacityTypes.Has(o.CapacityType)) {
				continue
			}
			out = append(out, candidate{instanceType: it, offering: o})
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(a.offering.Price, b.offering.Price),
			strings.Compare(a.instanceType.Name, b.instanceType.Name),
			strings.Compare(a.offering.Zone, b.offering.Zone),
			strings.Compare(a.offering.CapacityType, b.offering.CapacityType),
		)
	})
	return out
}

// compatible reports whether every requirement in reqs can be met together
// with the instance type's requirement on the same key. Keys the type does
// not constrain are left to the NodePool (its labels go on the node).
func compatible(typeReqs requirements.Requirements, reqs []requirements.Requirement) bool {
	for _, r := range reqs {
		if tr, ok := typeReqs.Get(r.Key()); ok && !tr.Intersect(r).Satisfiable() {
			return false
		}
	}
	return true
}

// fits reports whether allocatable covers every request.
func fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		have := allocatable[name]
		if have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// describe renders a resource list in name order, for messages.
func describe(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q := list[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
