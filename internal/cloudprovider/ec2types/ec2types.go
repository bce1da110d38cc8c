package ec2types

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// FromCatalog converts catalog instance types, keeping their order. The
// result shares nothing with its input.
func FromCatalog(its []catalog.InstanceType) []*cloudprovider.InstanceType {
	wellKnown := catalog.WellKnownLabels()
	out := make([]*cloudprovider.InstanceType, len(its))
	for i := range its {
		out[i] = convert(&its[i], wellKnown)
	}
	return out
}

// convert builds one instance type; wellKnown is catalog.WellKnownLabels(),
// passed in so that converting the whole catalog builds it once.
func convert(it *catalog.InstanceType, wellKnown []string) *cloudprovider.InstanceType {
	offerings := make([]cloudprovider.Offering, len(it.Offerings))
	for i, o := range it.Offerings {
		offerings[i] = cloudprovider.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available}
	}
	// Building the requirements in key order (wellKnown is sorted) spares
	// NewRequirements most of its sorting.
	offeringReqs := OfferingRequirements(offerings)
	reqs := make([]requirements.Requirement, 0, len(wellKnown)+len(it.Labels))
	pinned := 0
	for _, key := range wellKnown {
		switch value, ok := it.Labels[key]; {
		case ok:
			pinned++
			reqs = append(reqs, requirements.In(key, value))
		case key == corev1.LabelTopologyZone:
			reqs = append(reqs, offeringReqs[0])
		case key == v1.CapacityTypeLabelKey:
			reqs = append(reqs, offeringReqs[1])
		default:
			reqs = append(reqs, requirements.DoesNotExist(key))
		}
	}
	if pinned < len(it.Labels) {
		for _, key := range slices.Sorted(maps.Keys(it.Labels)) {
			if _, found := slices.BinarySearch(wellKnown, key); !found {
				reqs = append(reqs, requirements.In(key, it.Labels[key]))
			}
		}
	}
	return &cloudprovider.InstanceType{
		Name:         it.Name,
		Requirements: requirements.NewRequirements(reqs...),
		Offerings:    offerings,
		Capacity:     it.Capacity.DeepCopy(),
		Overhead: &cloudprovider.InstanceTypeOverhead{
			KubeReserved:      it.Overhead.KubeReserved.DeepCopy(),
			SystemReserved:    it.Overhead.SystemReserved.DeepCopy(),
			EvictionThreshold: it.Overhead.EvictionThreshold.DeepCopy(),
		},
	}
}

// OfferingRequirements returns the requirements on the offering-dependent
// keys: topology.kubernetes.io/zone and karpenter.sh/capacity-type, each In
// the values of the available offerings (In nothing when none is available).
// A provider that changes availability rebuilds these two requirements with it.
func OfferingRequirements(offerings []cloudprovider.Offering) []requirements.Requirement {
	var zones, capacityTypes []string
	for _, o := range offerings {
		if !o.Available {
			continue
		}
		if !slices.Contains(zones, o.Zone) {
			zones = append(zones, o.Zone)
		}
		if !slices.Contains(capacityTypes, o.CapacityType) {
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
	}
	return []requirements.Requirement{
		requirements.In(corev1.LabelTopologyZone, zones...),
		requirements.In(v1.CapacityTypeLabelKey, capacityTypes...),
	}
}
