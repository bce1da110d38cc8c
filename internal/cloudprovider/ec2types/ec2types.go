// Package ec2types turns the embedded EC2 catalog into the cloud-provider
// model the simulator packs pods onto: labels become requirements (with
// DoesNotExist for the well-known keys a type lacks, so that Exists and Gt
// requirements rule it out), offerings become zone and capacity-type
// requirements, and overhead is kept so allocatable is computed the same way
// for every provider. The kwok provider and the simulator's ec2-mix benchmark
// share it.
package ec2types

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Convert converts every catalog instance type, in order.
func Convert(types []catalog.InstanceType) []*cloudprovider.InstanceType {
	wellKnown := catalog.WellKnownLabels()
	out := make([]*cloudprovider.InstanceType, 0, len(types))
	for i := range types {
		out = append(out, convert(&types[i], wellKnown))
	}
	return out
}

// FromCatalog converts one catalog instance type.
func FromCatalog(it catalog.InstanceType) *cloudprovider.InstanceType {
	return convert(&it, catalog.WellKnownLabels())
}

func convert(it *catalog.InstanceType, wellKnown []string) *cloudprovider.InstanceType {
	reqs := make([]requirements.Requirement, 0, len(wellKnown)+2)
	for k, v := range it.Labels {
		reqs = append(reqs, requirements.In(k, v))
	}
	var zones, capacityTypes []string
	offerings := make([]cloudprovider.Offering, 0, len(it.Offerings))
	for _, o := range it.Offerings {
		offerings = append(offerings, cloudprovider.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available})
		if o.Available {
			zones = append(zones, o.Zone)
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
	}
	for _, key := range wellKnown {
		switch key {
		case corev1.LabelTopologyZone:
			if len(zones) > 0 {
				reqs = append(reqs, requirements.In(key, zones...))
			}
		case v1.CapacityTypeLabelKey:
			if len(capacityTypes) > 0 {
				reqs = append(reqs, requirements.In(key, capacityTypes...))
			}
		default:
			if _, ok := it.Labels[key]; !ok {
				reqs = append(reqs, requirements.DoesNotExist(key))
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
