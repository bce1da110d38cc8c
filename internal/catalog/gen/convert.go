package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

// Extended resource names, as Karpenter reports them.
const (
	resourcePodENI        = "vpc.amazonaws.com/pod-eni"
	resourceEFA           = "vpc.amazonaws.com/efa"
	resourceNvidiaGPU     = "nvidia.com/gpu"
	resourceAMDGPU        = "amd.com/gpu"
	resourceAWSNeuron     = "aws.amazon.com/neuron"
	resourceAWSNeuronCore = "aws.amazon.com/neuroncore"
	resourceHabanaGaudi   = "habana.ai/gaudi"
)

// convert validates every source entry and turns it into a catalog record,
// attaching its price when there is one. It reports every problem it finds,
// each naming the instance type.
func convert(src []sourceType, prices map[string]float64) ([]schema.InstanceType, error) {
	var errs []error
	out := make([]schema.InstanceType, 0, len(src))
	seen := make(map[string]bool, len(src))
	for _, s := range src {
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate instance type", s.Name))
			continue
		}
		seen[s.Name] = true
		rec, err := convertOne(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p, ok := prices[s.Name]; ok {
			rec.OnDemandPrice = &p
		}
		out = append(out, rec)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b schema.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func convertOne(s sourceType) (schema.InstanceType, error) {
	if err := validate(s); err != nil {
		return schema.InstanceType{}, err
	}
	rec := schema.InstanceType{
		Name:                      s.Name,
		Category:                  s.Category,
		Family:                    s.Family,
		Generation:                s.Generation,
		Size:                      s.Size,
		Hypervisor:                s.Hypervisor,
		EncryptionInTransit:       s.EncryptionInTransit,
		CapabilityFlex:            s.CapabilityFlex,
		CPU:                       s.CPU,
		CPUManufacturer:           s.CPUManufacturer,
		CPUSustainedClockSpeedMhz: s.CPUSustainedClockSpeedMhz,
		MemoryMiB:                 s.MemoryMiB,
		Arch:                      s.Arch,
		LocalNVMeGB:               s.LocalNVMeGB,
		NetworkBandwidthMbps:      s.NetworkBandwidthMbps,
		EBSBandwidthMbps:          s.EBSBandwidthMbps,
		Pods:                      s.MaxPods,
	}
	if g := s.GPU; g != nil {
		rec.GPU = &schema.GPU{Name: g.Name, Manufacturer: g.Manufacturer, Count: g.Count, MemoryMiB: g.MemoryMiB}
	}
	if a := s.Accelerator; a != nil {
		rec.Accelerator = &schema.Accelerator{Name: a.Name, Manufacturer: a.Manufacturer, Count: a.Count}
	}
	if v := s.VPCLimits; v != nil {
		maxENIs, _ := defaultCardENIs(v)
		rec.ENI = &schema.ENI{MaxENIs: maxENIs, IPv4PerENI: v.IPv4PerENI}
	}
	for _, r := range extendedResources(s) {
		if r.count == 0 {
			continue
		}
		if rec.ExtendedResources == nil {
			rec.ExtendedResources = map[string]int64{}
		}
		rec.ExtendedResources[r.name] = r.count
	}
	return rec, nil
}

// extendedResources maps the source's extended-resource fields to resource names.
// The pod-ENI count is the documented one (podENI), not the VPC-limits table's
// branch interfaces: for a few dozen types the two disagree, and the documented
// resources are what Karpenter reported.
func extendedResources(s sourceType) []namedCount {
	return []namedCount{
		{resourcePodENI, s.PodENI},
		{resourceEFA, s.EFA},
		{resourceNvidiaGPU, s.NvidiaGPU},
		{resourceAMDGPU, s.AMDGPU},
		{resourceAWSNeuron, s.AWSNeuron},
		{resourceAWSNeuronCore, s.AWSNeuronCore},
		{resourceHabanaGaudi, s.HabanaGaudi},
	}
}

// namedCount is a resource or field name with its count.
type namedCount struct {
	name  string
	count int64
}

// defaultCardENIs returns the maximum number of ENIs of the default network card.
func defaultCardENIs(v *sourceVPCLimits) (int64, bool) {
	for _, c := range v.NetworkCards {
		if c.Index == v.DefaultNetworkCardIndex {
			return c.MaxENIs, true
		}
	}
	return 0, false
}

// validate checks one source entry for values the catalog cannot use or that
// contradict each other. Each error names the instance type and the field.
func validate(s sourceType) error {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: field %s: "+format, append([]any{s.Name, field}, args...)...))
	}
	for _, f := range []struct{ field, v string }{
		{"category", s.Category}, {"family", s.Family}, {"size", s.Size}, {"cpuManufacturer", s.CPUManufacturer},
	} {
		if f.v == "" {
			fail(f.field, "must not be empty")
		}
	}
	if s.Family != "" && s.Size != "" && s.Name != s.Family+"."+s.Size {
		fail("name", "%q is not family %q + \".\" + size %q", s.Name, s.Family, s.Size)
	}
	for _, p := range []namedCount{
		{"generation", s.Generation}, {"cpu", s.CPU}, {"memoryMiB", s.MemoryMiB}, {"maxPods", s.MaxPods},
	} {
		if p.count <= 0 {
			fail(p.name, "must be > 0, got %d", p.count)
		}
	}
	// EC2 reports no sustained clock speed for a few previous-generation types
	// (c1, m1, m2, t1); Karpenter then labels them "0", and so do we.
	if s.CPUSustainedClockSpeedMhz < 0 {
		fail("cpuSustainedClockSpeedMhz", "must be >= 0, got %d", s.CPUSustainedClockSpeedMhz)
	}
	for _, p := range []struct {
		field string
		v     *int64
	}{
		{"localNVMeGB", s.LocalNVMeGB}, {"networkBandwidthMbps", s.NetworkBandwidthMbps}, {"ebsBandwidthMbps", s.EBSBandwidthMbps},
	} {
		if p.v != nil && *p.v <= 0 {
			fail(p.field, "must be > 0 or null, got %d", *p.v)
		}
	}
	switch s.Hypervisor {
	case "nitro", "xen", "":
	default:
		fail("hypervisor", "must be nitro, xen or empty, got %q", s.Hypervisor)
	}
	switch s.Arch {
	case "amd64":
	case "arm64":
		// Karpenter subtracts 64 MiB of CMA memory on arm64.
		if s.MemoryMiB <= 64 {
			fail("memoryMiB", "must be > 64 on arm64, got %d", s.MemoryMiB)
		}
	default:
		fail("arch", "must be amd64 or arm64, got %q", s.Arch)
	}
	if s.OS != "linux" {
		fail("os", "must be linux (the AL2023 assumption of the source), got %q", s.OS)
	}
	if g := s.GPU; g != nil {
		if g.Name == "" || g.Manufacturer == "" || g.Count < 0 || g.MemoryMiB <= 0 {
			fail("gpu", "needs a name, a manufacturer, count >= 0 and memoryMiB > 0, got %+v", *g)
		}
	}
	if a := s.Accelerator; a != nil {
		if a.Name == "" || a.Manufacturer == "" || a.Count <= 0 {
			fail("accelerator", "needs a name, a manufacturer and count > 0, got %+v", *a)
		}
	}
	for _, r := range extendedResources(s) {
		if r.count < 0 {
			fail(r.name, "must be >= 0, got %d", r.count)
		}
	}
	validateNetwork(s, fail)
	validateResources(s, fail)
	return errors.Join(errs...)
}

// validateNetwork checks the VPC limits against the documented pod count:
// pods = maxENIs(default card) * (ipv4PerENI - 1) + 2.
func validateNetwork(s sourceType, fail func(field, format string, args ...any)) {
	v := s.VPCLimits
	if v == nil {
		if s.ENILimitedMaxPods != nil {
			fail("eniLimitedMaxPods", "must be null without vpcLimits, got %d", *s.ENILimitedMaxPods)
		}
		return
	}
	maxENIs, ok := defaultCardENIs(v)
	if !ok {
		fail("vpcLimits.networkCards", "no card with the default index %d", v.DefaultNetworkCardIndex)
		return
	}
	if maxENIs <= 0 || v.IPv4PerENI <= 0 {
		fail("vpcLimits", "default card maxENIs and ipv4PerENI must be > 0, got %d and %d", maxENIs, v.IPv4PerENI)
		return
	}
	pods := maxENIs*(v.IPv4PerENI-1) + 2
	if pods != s.MaxPods {
		fail("maxPods", "is %d but vpcLimits give %d * (%d - 1) + 2 = %d", s.MaxPods, maxENIs, v.IPv4PerENI, pods)
	}
	if s.ENILimitedMaxPods == nil || *s.ENILimitedMaxPods != pods {
		fail("eniLimitedMaxPods", "must be %d", pods)
	}
}

// validateResources checks the documented resource strings against the counts
// the catalog carries, and rejects resources it would not know to report.
func validateResources(s sourceType, fail func(field, format string, args ...any)) {
	want := map[string]int64{"pods": s.MaxPods}
	for _, r := range extendedResources(s) {
		want[r.name] = r.count
	}
	for _, name := range slices.Sorted(maps.Keys(s.Resources)) {
		v := s.Resources[name]
		switch name {
		case "cpu", "memory", "ephemeral-storage":
			continue
		}
		if _, known := want[name]; !known {
			fail("resources", "unknown resource %s", name)
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fail("resources", "%s: %q is not an integer", name, v)
			continue
		}
		if n != want[name] {
			fail("resources", "%s is %d but the entry's own count is %d", name, n, want[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := s.Resources[name]; !ok && want[name] != 0 {
			fail("resources", "%s is missing but the entry's own count is %d", name, want[name])
		}
	}
}
