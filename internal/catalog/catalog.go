package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

//go:generate go run ./gen -data ../../hack/data/ec2 -out zz_generated.catalog.json

// catalogJSON is the generated catalog; see internal/catalog/gen.
//
//go:embed zz_generated.catalog.json
var catalogJSON []byte

// InstanceType is one EC2 instance type as a scheduler sees it under some
// Options: what it is (Labels), what it has (Capacity), what the node keeps for
// itself (Overhead), what is left for pods (Allocatable) and where and at what
// price it can be bought (Offerings).
type InstanceType struct {
	// Name is the EC2 instance type, e.g. "m5.large".
	Name string
	// Labels are the node labels the type implies, one value per key. Zone
	// and capacity type are not among them: they vary per offering.
	Labels map[string]string
	// Capacity is what the node reports: cpu, memory, pods,
	// ephemeral-storage and the non-zero extended resources.
	Capacity corev1.ResourceList
	// Allocatable is Capacity less Overhead, what pods may request.
	Allocatable corev1.ResourceList
	// Overhead is what the kubelet keeps back from Capacity.
	Overhead Overhead
	// Offerings are the zone and capacity-type combinations the type is sold
	// in, with prices. Empty for the few types without a known price.
	Offerings []Offering
}

// Overhead is what a node holds back from pods, by the kubelet's three
// mechanisms.
type Overhead struct {
	// KubeReserved is kept for the kubelet and container runtime.
	KubeReserved corev1.ResourceList
	// SystemReserved is kept for the OS; empty unless configured.
	SystemReserved corev1.ResourceList
	// EvictionThreshold is the free memory and disk below which the kubelet
	// evicts pods.
	EvictionThreshold corev1.ResourceList
}

// Offering is one way to buy an instance type.
type Offering struct {
	// Zone is the topology.kubernetes.io/zone of the offering.
	Zone string
	// CapacityType is the karpenter.sh/capacity-type: "on-demand" or "spot".
	CapacityType string
	// Price is in USD per hour.
	Price float64
	// Available tells whether the offering can be launched now; the static
	// catalog marks every offering available.
	Available bool
}

// entry is a decoded instance type with its labels that no Options change.
// Entries are shared by every Load and never modified.
type entry struct {
	schema.InstanceType
	staticLabels []label
}

// entries decodes the embedded catalog once.
var entries = sync.OnceValues(func() ([]entry, error) { return decode(catalogJSON) })

// decode parses the generated catalog.
func decode(b []byte) ([]entry, error) {
	var f schema.File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("decoding embedded catalog: %w", err)
	}
	out := make([]entry, len(f.InstanceTypes))
	for i := range f.InstanceTypes {
		t := &f.InstanceTypes[i]
		if i > 0 && f.InstanceTypes[i-1].Name >= t.Name {
			return nil, fmt.Errorf("decoding embedded catalog: %s after %s: not sorted by name", t.Name, f.InstanceTypes[i-1].Name)
		}
		out[i] = entry{InstanceType: *t, staticLabels: staticLabels(t)}
	}
	return out, nil
}

// Load returns every instance type of the catalog, sorted by name, with labels,
// capacity, overhead, allocatable and offerings computed for opts. Under a
// Windows AMI family the arm64 types, which cannot launch, are left out.
//
// Each call returns new values that the caller may change freely.
func Load(opts Options) ([]InstanceType, error) {
	s, err := opts.compile()
	if err != nil {
		return nil, fmt.Errorf("validating catalog options: %w", err)
	}
	all, err := entries()
	if err != nil {
		return nil, err
	}
	return s.compute(all), nil
}

// Compute is Load for raw facts given by the caller instead of the embedded
// ones, for example facts converted from EC2's DescribeInstanceTypes: the same
// formulas, the same filtering of arm64 types under Windows, the input's order.
// Unlike Load it accepts opts with no Zones, and then leaves Offerings empty, so
// that a caller that prices offerings itself need not name zones. The facts'
// OnDemandPrice prices the offerings of opts.Zones. facts is not modified and
// nothing of it is retained.
func Compute(facts []schema.InstanceType, opts Options) ([]InstanceType, error) {
	s, err := opts.compileWith(false)
	if err != nil {
		return nil, fmt.Errorf("validating catalog options: %w", err)
	}
	es := make([]entry, len(facts))
	for i := range facts {
		es[i] = entry{InstanceType: cloneFacts(facts[i]), staticLabels: staticLabels(&facts[i])}
	}
	return s.compute(es), nil
}

// compute applies the formulas under s to every entry, in order.
func (s *settings) compute(all []entry) []InstanceType {
	out := make([]InstanceType, 0, len(all))
	for i := range all {
		e := &all[i]
		if s.family.amd64Only && e.Arch != "amd64" {
			continue
		}
		capacity, overhead := s.resources(&e.InstanceType)
		out = append(out, InstanceType{
			Name:        e.Name,
			Labels:      s.labels(e.staticLabels),
			Capacity:    capacity,
			Allocatable: allocatable(capacity, overhead),
			Overhead:    overhead,
			Offerings:   s.offerings(e.Name, e.OnDemandPrice),
		})
	}
	return out
}

// Facts returns the raw facts of every catalog instance type, sorted by name:
// what EC2's DescribeInstanceTypes reports and the static on-demand price,
// before any AMI family or kubelet setting is applied. The local AWS endpoint
// serves them as EC2 would; each call returns new values.
func Facts() ([]schema.InstanceType, error) {
	all, err := entries()
	if err != nil {
		return nil, err
	}
	out := make([]schema.InstanceType, len(all))
	for i := range all {
		out[i] = cloneFacts(all[i].InstanceType)
	}
	return out, nil
}

// cloneFacts deep-copies the pointer and map fields of t.
func cloneFacts(t schema.InstanceType) schema.InstanceType {
	if t.GPU != nil {
		g := *t.GPU
		t.GPU = &g
	}
	if t.Accelerator != nil {
		a := *t.Accelerator
		t.Accelerator = &a
	}
	if t.ENI != nil {
		e := *t.ENI
		t.ENI = &e
	}
	for _, p := range []**int64{&t.LocalNVMeGB, &t.NetworkBandwidthMbps, &t.EBSBandwidthMbps} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	if t.OnDemandPrice != nil {
		v := *t.OnDemandPrice
		t.OnDemandPrice = &v
	}
	if t.ExtendedResources != nil {
		t.ExtendedResources = maps.Clone(t.ExtendedResources)
	}
	return t
}
