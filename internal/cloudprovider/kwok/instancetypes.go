package kwok

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

// GetInstanceTypes returns every catalog instance type, sorted by name,
// whatever the NodePool: offerings that failed with insufficient capacity in
// the last UnavailableOfferingTTL are marked unavailable, and types whose
// offerings are all unavailable (or that have none) are included too. The
// types are shared; callers must not modify them.
func (c *CloudProvider) GetInstanceTypes(context.Context, *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return slices.Clone(c.instanceTypeView()), nil
}

// instanceTypeView returns the instance types with the offerings of the
// insufficient-capacity cache marked unavailable, first dropping the entries
// that have expired. The slice is shared; callers must not modify it.
//
// Types none of whose offerings is in the cache are the shared originals;
// the others are copies (sharing capacity and overhead) whose offerings and
// zone and capacity-type requirements say what is still available. The view
// is rebuilt only when the cache changes.
func (c *CloudProvider) instanceTypeView() []*cloudprovider.InstanceType {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for id, until := range c.unavailable {
		if !now.Before(until) {
			delete(c.unavailable, id)
			c.view = nil
		}
	}
	if c.view != nil {
		return c.view
	}
	if len(c.unavailable) == 0 {
		c.view = c.instanceTypes
		return c.view
	}
	view := make([]*cloudprovider.InstanceType, len(c.instanceTypes))
	for i, it := range c.instanceTypes {
		view[i] = c.withUnavailableOfferings(it)
	}
	c.view = view
	return view
}

// withUnavailableOfferings returns it itself if none of its offerings is in
// the insufficient-capacity cache, and otherwise a copy with those offerings
// marked unavailable. The caller holds c.mu.
func (c *CloudProvider) withUnavailableOfferings(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	var offerings []cloudprovider.Offering
	for i, o := range it.Offerings {
		if _, ok := c.unavailable[OfferingID{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}]; !ok {
			continue
		}
		if offerings == nil {
			offerings = slices.Clone(it.Offerings)
		}
		offerings[i].Available = false
	}
	if offerings == nil {
		return it
	}
	return &cloudprovider.InstanceType{
		Name:         it.Name,
		Requirements: it.Requirements.Add(ec2types.OfferingRequirements(offerings)...),
		Offerings:    offerings,
		Capacity:     it.Capacity,
		Overhead:     it.Overhead,
	}
}

// markUnavailable puts an offering in the insufficient-capacity cache for
// UnavailableOfferingTTL.
func (c *CloudProvider) markUnavailable(ctx context.Context, id OfferingID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unavailable[id] = c.clock.Now().Add(UnavailableOfferingTTL)
	c.view = nil
	log.FromContext(ctx).V(1).Info("Marking offering unavailable", "offering", id.String(), "ttl", UnavailableOfferingTTL)
}
