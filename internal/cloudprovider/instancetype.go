package cloudprovider

import (
	"math"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// InstanceType is one shape of machine a provider can launch, with the places
// and prices it can be launched at. Providers build them once per NodePool and
// share them read-only; use pointers, never copies (Allocatable is cached).
type InstanceType struct {
	// Name is the provider's name for the type, for example "m5.large".
	Name string
	// Requirements are the type's labels as single-value In requirements
	// (instance type, architecture, OS, family, size, ...), multi-value In
	// requirements for labels that depend on the offering (zone and capacity
	// type, listing the available ones), and DoesNotExist for the well-known
	// keys the type does not have, so that Exists or Gt requirements on them fail.
	Requirements requirements.Requirements
	// Offerings are the (zone, capacity type) pairs the type is sold in, with
	// their prices; unavailable ones are kept so that callers can explain why
	// a type was not chosen.
	Offerings []Offering
	// Capacity is what the machine has: cpu, memory, pods, ephemeral-storage
	// and extended resources such as nvidia.com/gpu.
	Capacity corev1.ResourceList
	// Overhead is what the kubelet and system reserve; nil means none.
	Overhead *InstanceTypeOverhead

	allocatableOnce sync.Once
	allocatable     corev1.ResourceList
}

// InstanceTypeOverhead is the capacity a node keeps for itself.
type InstanceTypeOverhead struct {
	// KubeReserved is reserved for the kubelet and container runtime.
	KubeReserved corev1.ResourceList
	// SystemReserved is reserved for operating-system daemons.
	SystemReserved corev1.ResourceList
	// EvictionThreshold is kept free by evicting pods before it is used.
	EvictionThreshold corev1.ResourceList
}

// Total returns the sum of all reservations.
func (o *InstanceTypeOverhead) Total() corev1.ResourceList {
	total := corev1.ResourceList{}
	if o == nil {
		return total
	}
	for _, list := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for name, q := range list {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// Allocatable returns what pods may use: capacity minus overhead, with the
// memory backing huge pages also removed from memory, never below zero. It is
// computed once; the returned list must not be modified.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	it.allocatableOnce.Do(func() {
		alloc := corev1.ResourceList{}
		for name, q := range it.Capacity {
			alloc[name] = q.DeepCopy()
		}
		overhead := it.Overhead.Total()
		for name, q := range it.Capacity {
			if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				overhead[corev1.ResourceMemory] = addQuantity(overhead[corev1.ResourceMemory], q)
			}
		}
		for name, q := range overhead {
			have, ok := alloc[name]
			if !ok {
				continue
			}
			have.Sub(q)
			if have.Sign() < 0 {
				have = *resource.NewQuantity(0, have.Format)
			}
			alloc[name] = have
		}
		it.allocatable = alloc
	})
	return it.allocatable
}

func addQuantity(a, b resource.Quantity) resource.Quantity {
	a = a.DeepCopy()
	a.Add(b)
	return a
}

// Offering is one place and purchase option an instance type is sold in.
type Offering struct {
	// Zone is the topology.kubernetes.io/zone the instance would run in.
	Zone string
	// CapacityType is the karpenter.sh/capacity-type: spot, on-demand or reserved.
	CapacityType string
	// Price is the hourly price in dollars.
	Price float64
	// Available is false while the provider knows it cannot launch this
	// offering (for example after an insufficient-capacity error).
	Available bool
	// ReservationID is the capacity reservation a reserved offering launches
	// into (karpenter.k8s.aws/capacity-reservation-id on AWS); empty for
	// spot and on-demand offerings.
	ReservationID string
	// ReservationCapacity is how many more instances the reservation takes;
	// a reserved offering with none left is not Available.
	ReservationCapacity int
}

// CheapestOffering returns the cheapest available offering for which allowed
// returns true (nil allows all), and whether there is one. Ties go to the
// earliest offering, so the choice is deterministic.
func (it *InstanceType) CheapestOffering(allowed func(Offering) bool) (Offering, bool) {
	best, found := Offering{Price: math.Inf(1)}, false
	for _, o := range it.Offerings {
		if !o.Available || (allowed != nil && !allowed(o)) {
			continue
		}
		if !found || o.Price < best.Price {
			best, found = o, true
		}
	}
	return best, found
}

// HasAvailableOffering reports whether any offering can be launched.
func (it *InstanceType) HasAvailableOffering() bool {
	_, ok := it.CheapestOffering(nil)
	return ok
}
