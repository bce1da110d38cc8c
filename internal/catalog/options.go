package catalog

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AMIFamily is the node image family of an EC2NodeClass (spec.amiFamily). It
// changes how many pods a node takes, how much memory the kubelet reserves,
// the kubernetes.io/os label and the default root volume.
type AMIFamily string

// The AMI families Karpenter v1 supports.
const (
	// AMIFamilyAL2023 is Amazon Linux 2023, the default.
	AMIFamilyAL2023 AMIFamily = "AL2023"
	// AMIFamilyAL2 is Amazon Linux 2; it computes like AL2023.
	AMIFamilyAL2 AMIFamily = "AL2"
	// AMIFamilyBottlerocket ignores podsPerCore and sizes kube-reserved memory from the pods capacity.
	AMIFamilyBottlerocket AMIFamily = "Bottlerocket"
	// AMIFamilyWindows2019 runs 110 pods, amd64 only, with a 50Gi root volume.
	AMIFamilyWindows2019 AMIFamily = "Windows2019"
	// AMIFamilyWindows2022 is like AMIFamilyWindows2019 with another build.
	AMIFamilyWindows2022 AMIFamily = "Windows2022"
	// AMIFamilyWindows2025 is like AMIFamilyWindows2019 with another build.
	AMIFamilyWindows2025 AMIFamily = "Windows2025"
	// AMIFamilyCustom is a user-supplied AMI; it computes like AL2.
	AMIFamilyCustom AMIFamily = "Custom"
)

// InstanceStorePolicyRAID0 makes the node use its NVMe instance store, striped,
// as ephemeral storage (EC2NodeClass spec.instanceStorePolicy).
const InstanceStorePolicyRAID0 = "RAID0"

// Defaults of the controller flags and of the EC2NodeClass that the upstream
// documentation (and so hack/data/ec2) assumes.
const (
	// DefaultVMMemoryOverheadPercent is Karpenter's --vm-memory-overhead-percent.
	DefaultVMMemoryOverheadPercent = 0.075
	// DefaultRegion is the region whose prices the catalog carries.
	DefaultRegion = "us-east-1"
)

// Options are the settings that change an instance type's labels, capacity,
// overhead and offerings. Start from DefaultOptions: the zero value is not valid.
type Options struct {
	// AMIFamily is the node image family; see the AMIFamily constants.
	AMIFamily AMIFamily
	// VMMemoryOverheadPercent is the fraction of memory taken by the
	// hypervisor, in [0, 1) (Karpenter's --vm-memory-overhead-percent).
	VMMemoryOverheadPercent float64
	// ReservedENIs is the number of ENIs kept from pod networking
	// (Karpenter's --reserved-enis); it lowers ENI-limited pod density.
	ReservedENIs int
	// Kubelet holds the kubelet settings of the EC2NodeClass.
	Kubelet KubeletOptions
	// RootVolumeSize is the size of the volume that backs ephemeral storage.
	// Nil means the AMI family's default: 50Gi for Windows, 20Gi otherwise.
	RootVolumeSize *resource.Quantity
	// InstanceStorePolicy is "" or InstanceStorePolicyRAID0. With RAID0, types
	// with local NVMe get their NVMe size (in decimal GB) as ephemeral storage.
	InstanceStorePolicy string
	// Region is the topology.kubernetes.io/region label. Prices are always
	// us-east-1's, the only region of the static price table, which is also
	// what Karpenter falls back to for a region without its own table.
	Region string
	// Zones get one on-demand and one spot offering each, in this order.
	// Each must start with Region. Load needs at least one; Compute accepts
	// none and then computes no offerings.
	Zones []string
}

// KubeletOptions are the EC2NodeClass spec.kubelet fields that change capacity
// or overhead. Nil and empty fields leave the computed values alone.
type KubeletOptions struct {
	// MaxPods replaces the ENI-limited (or Windows) pod count.
	MaxPods *int32
	// PodsPerCore caps pods at PodsPerCore * vCPUs; 0 means no cap. Bottlerocket ignores it.
	PodsPerCore *int32
	// KubeReserved replaces the computed kube-reserved value of each key given
	// (cpu, memory, ephemeral-storage, pid).
	KubeReserved map[string]string
	// SystemReserved reserves resources for the OS (cpu, memory, ephemeral-storage, pid).
	SystemReserved map[string]string
	// EvictionHard replaces the default eviction thresholds: memory.available
	// (default 100Mi) and nodefs.available (default 10%) as a quantity or a
	// percentage of capacity; "100%" disables the threshold. The other
	// signals are accepted and do not change allocatable.
	EvictionHard map[string]string
	// EvictionSoft takes the same signals. Where it gives memory.available or
	// nodefs.available, the larger of the hard and soft thresholds is
	// reserved, as the kubelet may evict from the soft one. Bottlerocket
	// ignores it.
	EvictionSoft map[string]string
}

// DefaultOptions returns the settings hack/data/ec2 was computed with: AL2023,
// 7.5% VM memory overhead, no reserved ENIs, no kubelet overrides, the family's
// default root volume (20Gi), us-east-1 and its zones a, b and c.
func DefaultOptions() Options {
	return Options{
		AMIFamily:               AMIFamilyAL2023,
		VMMemoryOverheadPercent: DefaultVMMemoryOverheadPercent,
		Region:                  DefaultRegion,
		Zones:                   []string{"us-east-1a", "us-east-1b", "us-east-1c"},
	}
}

// Validate reports every invalid setting; each error names its field.
func (o Options) Validate() error {
	_, err := o.compile()
	return err
}

// Eviction signals that change allocatable.
const (
	evictionMemoryAvailable = "memory.available"
	evictionNodeFSAvailable = "nodefs.available"
)

// reservedKeys are the keys kubeReserved and systemReserved accept.
func reservedKeys() []string { return []string{"cpu", "memory", "ephemeral-storage", "pid"} }

// evictionKeys are the keys evictionHard accepts.
func evictionKeys() []string {
	return []string{
		evictionMemoryAvailable, evictionNodeFSAvailable, "nodefs.inodesFree",
		"imagefs.available", "imagefs.inodesFree", "pid.available",
	}
}

// settings are Options checked and parsed, ready for computing instance types.
type settings struct {
	family                familyTraits
	vmOverhead            float64
	reservedENIs          int64
	maxPods               *int64
	podsPerCore           int64
	kubeReservedOverrides corev1.ResourceList
	systemReserved        corev1.ResourceList
	// evictMemory and evictNodeFS hold the memory.available and
	// nodefs.available thresholds evictionHard and evictionSoft give (the
	// larger of the two is reserved); empty when the default applies.
	evictMemory, evictNodeFS []signal
	rootVolume               resource.Quantity
	raid0                    bool
	region                   string
	zones                    []string
}

// signal is an eviction threshold: a percentage of capacity or a quantity.
type signal struct {
	percent  float64
	quantity *resource.Quantity
}

// compile validates o and parses it into settings; Zones must not be empty.
func (o Options) compile() (settings, error) { return o.compileWith(true) }

// compileWith validates o and parses it into settings. Zones may be empty
// unless requireZones.
func (o Options) compileWith(requireZones bool) (settings, error) {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	s := settings{
		vmOverhead:   o.VMMemoryOverheadPercent,
		reservedENIs: int64(o.ReservedENIs),
		raid0:        o.InstanceStorePolicy == InstanceStorePolicyRAID0,
		region:       o.Region,
		zones:        slices.Clone(o.Zones),
	}
	family, ok := familyTraitsOf(o.AMIFamily)
	if !ok {
		fail("AMIFamily", "unknown family %q, want one of %s", o.AMIFamily, strings.Join(amiFamilyNames(), ", "))
	}
	s.family = family
	if p := o.VMMemoryOverheadPercent; math.IsNaN(p) || p < 0 || p >= 1 {
		fail("VMMemoryOverheadPercent", "must be >= 0 and < 1, got %v", p)
	}
	if o.ReservedENIs < 0 {
		fail("ReservedENIs", "must be >= 0, got %d", o.ReservedENIs)
	}
	if p := o.Kubelet.MaxPods; p != nil {
		if *p < 0 {
			fail("Kubelet.MaxPods", "must be >= 0, got %d", *p)
		}
		s.maxPods = new(int64(*p))
	}
	if p := o.Kubelet.PodsPerCore; p != nil {
		if *p < 0 {
			fail("Kubelet.PodsPerCore", "must be >= 0, got %d", *p)
		}
		s.podsPerCore = int64(*p)
	}
	var err error
	if s.kubeReservedOverrides, err = parseReserved("Kubelet.KubeReserved", o.Kubelet.KubeReserved); err != nil {
		errs = append(errs, err)
	}
	if s.systemReserved, err = parseReserved("Kubelet.SystemReserved", o.Kubelet.SystemReserved); err != nil {
		errs = append(errs, err)
	}
	for _, e := range []struct {
		field   string
		signals map[string]string
		counts  bool
	}{
		{"Kubelet.EvictionHard", o.Kubelet.EvictionHard, true},
		{"Kubelet.EvictionSoft", o.Kubelet.EvictionSoft, family.evictionSoft},
	} {
		memory, nodefs, err := parseEviction(e.field, e.signals)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !e.counts {
			continue
		}
		if memory != nil {
			s.evictMemory = append(s.evictMemory, *memory)
		}
		if nodefs != nil {
			s.evictNodeFS = append(s.evictNodeFS, *nodefs)
		}
	}
	s.rootVolume = family.rootVolume
	if q := o.RootVolumeSize; q != nil {
		if q.Sign() <= 0 {
			fail("RootVolumeSize", "must be > 0, got %s", q)
		}
		s.rootVolume = q.DeepCopy()
	}
	if p := o.InstanceStorePolicy; p != "" && p != InstanceStorePolicyRAID0 {
		fail("InstanceStorePolicy", "must be empty or %q, got %q", InstanceStorePolicyRAID0, p)
	}
	if o.Region == "" {
		fail("Region", "must not be empty")
	}
	if requireZones && len(o.Zones) == 0 {
		fail("Zones", "must not be empty")
	}
	for i, z := range o.Zones {
		field := fmt.Sprintf("Zones[%d]", i)
		switch {
		case z == "":
			fail(field, "must not be empty")
		case slices.Index(o.Zones, z) < i:
			fail(field, "duplicate zone %q", z)
		case o.Region != "" && !strings.HasPrefix(z, o.Region):
			fail(field, "zone %q is not in region %q", z, o.Region)
		}
	}
	return s, errors.Join(errs...)
}

// parseReserved parses a kubeReserved or systemReserved map.
func parseReserved(field string, m map[string]string) (corev1.ResourceList, error) {
	var errs []error
	out := make(corev1.ResourceList, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f := fmt.Sprintf("%s[%s]", field, k)
		if !slices.Contains(reservedKeys(), k) {
			errs = append(errs, fmt.Errorf("%s: unknown key, want one of %s", f, strings.Join(reservedKeys(), ", ")))
			continue
		}
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: parsing %q: %w", f, m[k], err))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %s", f, m[k]))
			continue
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, errors.Join(errs...)
}

// parseEviction parses evictionHard or evictionSoft and returns the
// memory.available and nodefs.available thresholds (nil when not given).
func parseEviction(field string, m map[string]string) (memory, nodefs *signal, err error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f := fmt.Sprintf("%s[%s]", field, k)
		if !slices.Contains(evictionKeys(), k) {
			errs = append(errs, fmt.Errorf("%s: unknown signal, want one of %s", f, strings.Join(evictionKeys(), ", ")))
			continue
		}
		sig, err := parseSignal(m[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		switch k {
		case evictionMemoryAvailable:
			memory = &sig
		case evictionNodeFSAvailable:
			nodefs = &sig
		}
	}
	return memory, nodefs, errors.Join(errs...)
}

// parseSignal parses "p%" (0 <= p <= 100) or a non-negative quantity.
func parseSignal(v string) (signal, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
			return signal{}, fmt.Errorf("percentage %q must be a number from 0 to 100", v)
		}
		return signal{percent: f}, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return signal{}, fmt.Errorf("parsing %q: %w", v, err)
	}
	if q.Sign() < 0 {
		return signal{}, fmt.Errorf("must not be negative, got %s", v)
	}
	return signal{quantity: &q}, nil
}
