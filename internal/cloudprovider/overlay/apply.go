package overlay

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// Pool is a NodePool with the instance types its provider offers it.
type Pool struct {
	NodePool      *v1.NodePool
	InstanceTypes []*cloudprovider.InstanceType
}

// Conflict says an overlay is left out because an overlay of the same
// weight earlier in the order changes the same thing.
type Conflict struct {
	// Overlay is the overlay left out; With is the one applied instead.
	Overlay, With string
	// NodePool and InstanceType are where they first met.
	NodePool, InstanceType string
	// What they both change: "the price of <zone>/<capacity type>" or
	// "resource <name>".
	What string
}

// Message describes the conflict for a status condition.
func (c Conflict) Message() string {
	return fmt.Sprintf("conflicts with NodeOverlay %q of the same weight: both change %s of instance type %s in NodePool %s; %q is applied, this one is not",
		c.With, c.What, c.InstanceType, c.NodePool, c.With)
}

// Evaluation is the outcome of Evaluate.
type Evaluation struct {
	// Applied are the overlays that apply, in precedence order.
	Applied []Overlay
	// Conflicts are the overlays left out, by name.
	Conflicts map[string]Conflict
}

// Evaluate decides which overlays apply to the pools' instance types: all
// of them, in precedence order (see Sort), except each overlay that would
// set an offering's price or a resource that an applied overlay of the same
// weight sets already, on any pool. The input is not modified.
func Evaluate(pools []Pool, overlays []Overlay) Evaluation {
	ordered := slices.Clone(overlays)
	Sort(ordered)
	out := Evaluation{Conflicts: map[string]Conflict{}}
	// The applied overlay that last claimed each slot: by pool, type and
	// offering, and by pool, type and resource.
	type setter struct {
		name   string
		weight int32
	}
	prices := map[[3]string]setter{}
	resources := map[[3]string]setter{}
	for _, o := range ordered {
		var conflict *Conflict
		var priced, sized [][3]string
	pools:
		for _, p := range pools {
			for _, it := range p.InstanceTypes {
				offerings := Matching(p.NodePool, it, o.Requirements)
				if len(offerings) == 0 {
					continue
				}
				if o.Price != nil {
					for _, i := range offerings {
						key := [3]string{p.NodePool.Name, it.Name, offeringKey(it.Offerings[i])}
						if s, ok := prices[key]; ok && s.weight == o.Weight {
							conflict = &Conflict{Overlay: o.Name, With: s.name, NodePool: p.NodePool.Name, InstanceType: it.Name,
								What: fmt.Sprintf("the price of %s/%s", it.Offerings[i].Zone, it.Offerings[i].CapacityType)}
							break pools
						}
						priced = append(priced, key)
					}
				}
				for _, name := range slices.Sorted(maps.Keys(o.Capacity)) {
					key := [3]string{p.NodePool.Name, it.Name, string(name)}
					if s, ok := resources[key]; ok && s.weight == o.Weight {
						conflict = &Conflict{Overlay: o.Name, With: s.name, NodePool: p.NodePool.Name, InstanceType: it.Name,
							What: fmt.Sprintf("resource %s", name)}
						break pools
					}
					sized = append(sized, key)
				}
			}
		}
		if conflict != nil {
			out.Conflicts[o.Name] = *conflict
			continue
		}
		out.Applied = append(out.Applied, o)
		// The weight that last claimed a slot is the lowest so far (the
		// order is by weight): only an overlay of that same weight can
		// conflict with it.
		for _, key := range priced {
			prices[key] = setter{o.Name, o.Weight}
		}
		for _, key := range sized {
			resources[key] = setter{o.Name, o.Weight}
		}
	}
	return out
}

// Result is the outcome of Apply.
type Result struct {
	// InstanceTypes are the input types in the same order: copies where an
	// overlay changed something, the originals elsewhere.
	InstanceTypes []*cloudprovider.InstanceType
	// PriceOverlaid names the types with an offering whose price changed.
	PriceOverlaid map[string]bool
	// CapacityOverlaid names the types with capacity added or replaced.
	CapacityOverlaid map[string]bool
}

// Changed reports whether any overlay changed any type.
func (r Result) Changed() bool { return len(r.PriceOverlaid) > 0 || len(r.CapacityOverlaid) > 0 }

// Apply applies overlays (the Applied of an Evaluation, so without
// conflicts) to a pool's instance types: each offering's price by the first
// overlay in precedence order that changes the price of a matching
// offering, each resource by the first overlay that names it, on types
// with a matching offering. The input types are not modified.
func Apply(pool *v1.NodePool, its []*cloudprovider.InstanceType, overlays []Overlay) Result {
	out := Result{InstanceTypes: its, PriceOverlaid: map[string]bool{}, CapacityOverlaid: map[string]bool{}}
	if len(overlays) == 0 {
		return out
	}
	ordered := slices.Clone(overlays)
	Sort(ordered)
	out.InstanceTypes = make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out.InstanceTypes[i] = it
		var offerings []cloudprovider.Offering
		var capacity corev1.ResourceList
		priced := make([]bool, len(it.Offerings))
		sized := map[corev1.ResourceName]bool{}
		for _, o := range ordered {
			matching := Matching(pool, it, o.Requirements)
			if len(matching) == 0 {
				continue
			}
			if o.Price != nil {
				for _, j := range matching {
					if priced[j] {
						continue
					}
					if offerings == nil {
						offerings = slices.Clone(it.Offerings)
					}
					offerings[j].Price = o.Price.Apply(it.Offerings[j].Price)
					priced[j] = true
				}
			}
			for _, name := range slices.Sorted(maps.Keys(o.Capacity)) {
				if sized[name] {
					continue
				}
				if capacity == nil {
					capacity = corev1.ResourceList{}
					maps.Copy(capacity, it.Capacity)
				}
				capacity[name] = o.Capacity[name].DeepCopy()
				sized[name] = true
				out.CapacityOverlaid[it.Name] = true
			}
		}
		if offerings == nil && capacity == nil {
			continue
		}
		cp := &cloudprovider.InstanceType{
			Name: it.Name, Requirements: it.Requirements, Offerings: it.Offerings, Capacity: it.Capacity, Overhead: it.Overhead,
		}
		if offerings != nil {
			cp.Offerings = offerings
			out.PriceOverlaid[it.Name] = true
		}
		if capacity != nil {
			cp.Capacity = capacity
		}
		out.InstanceTypes[i] = cp
	}
	return out
}
