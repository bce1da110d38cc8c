package catalog

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

// ResourcePrivateIPv4Address is the extended resource Windows nodes advertise:
// the secondary IPv4 addresses of the primary ENI.
const ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"

const (
	mebibyte = 1 << 20
	// armCMAMiB is the memory Graviton kernels reserve for CMA.
	armCMAMiB = 64
	// defaultEvictionMemory and kubeReservedEphemeral are Karpenter's defaults.
	defaultEvictionMemory = 100 * mebibyte
	kubeReservedEphemeral = 1 << 30
	// defaultEvictionNodeFSPercent is the default nodefs.available threshold.
	defaultEvictionNodeFSPercent = 10
)

// resources computes capacity and overhead of t under s, following
// hack/data/ec2/README.md ("How capacity and allocatable are derived").
func (s *settings) resources(t *schema.InstanceType) (corev1.ResourceList, Overhead) {
	memory := s.memory(t)
	storage := s.ephemeralStorage(t)
	pods := s.pods(t)

	capacity := make(corev1.ResourceList, 4+len(t.ExtendedResources))
	capacity[corev1.ResourceCPU] = *resource.NewQuantity(t.CPU, resource.DecimalSI)
	capacity[corev1.ResourceMemory] = memory
	capacity[corev1.ResourceEphemeralStorage] = storage
	capacity[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	for name, n := range t.ExtendedResources {
		capacity[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	if s.family.windowsBuild != "" && t.ENI != nil {
		capacity[ResourcePrivateIPv4Address] = *resource.NewQuantity(t.ENI.IPv4PerENI-1, resource.DecimalSI)
	}

	// Karpenter sizes kube-reserved memory from ENI-limited pods (ignoring
	// reserved ENIs and kubelet settings) for AL2, AL2023 and Custom, and from
	// the pods capacity for Bottlerocket and Windows.
	reservedPods := pods
	if s.family.eniMemoryOverhead {
		reservedPods = eniLimitedPods(t, 0)
	}
	return capacity, Overhead{
		KubeReserved:      s.kubeReserved(t.CPU, reservedPods),
		SystemReserved:    copyResourceList(s.systemReserved),
		EvictionThreshold: s.evictionThreshold(memory, storage),
	}
}

// memory is the memory capacity: EC2's memory less 64MiB on arm64, less the
// VM overhead, ceil(m * VMMemoryOverheadPercent) MiB. The float expression is
// Karpenter's, so that rounding agrees with it for every type.
func (s *settings) memory(t *schema.InstanceType) resource.Quantity {
	mib := t.MemoryMiB
	if t.Arch == "arm64" {
		mib -= armCMAMiB
	}
	overhead := int64(math.Ceil(float64(mib*mebibyte) * s.vmOverhead / 1024 / 1024))
	return *resource.NewQuantity((mib-overhead)*mebibyte, resource.BinarySI)
}

// ephemeralStorage is the local NVMe size for RAID0, else the root volume.
func (s *settings) ephemeralStorage(t *schema.InstanceType) resource.Quantity {
	if s.raid0 && t.LocalNVMeGB != nil {
		return *resource.NewScaledQuantity(*t.LocalNVMeGB, resource.Giga)
	}
	return s.rootVolume.DeepCopy()
}

// pods is the pods capacity: kubelet maxPods, else ENI-limited pods (Windows:
// 110), then capped by podsPerCore where the family honours it.
func (s *settings) pods(t *schema.InstanceType) int64 {
	var pods int64
	switch {
	case s.maxPods != nil:
		pods = *s.maxPods
	case s.family.eniPodDensity:
		pods = eniLimitedPods(t, s.reservedENIs)
	default:
		pods = defaultWindowsPods
	}
	if s.podsPerCore > 0 && s.family.podsPerCore {
		pods = min(pods, s.podsPerCore*t.CPU)
	}
	return pods
}

// eniLimitedPods is (maxENIs - reservedENIs) * (ipv4PerENI - 1) + 2, or 0 when
// no ENI is left. Types without VPC limits in the source keep their
// documented count, which assumes no reserved ENIs.
func eniLimitedPods(t *schema.InstanceType, reservedENIs int64) int64 {
	if t.ENI == nil {
		return t.Pods
	}
	usable := t.ENI.MaxENIs - reservedENIs
	if usable <= 0 {
		return 0
	}
	return usable*(t.ENI.IPv4PerENI-1) + 2
}

// kubeReserved is Karpenter's kube-reserved: a share of each CPU range, 11MiB
// per pod plus 255MiB, 1Gi of ephemeral storage; each key given in
// kubelet.kubeReserved replaces the computed value.
func (s *settings) kubeReserved(cpus, pods int64) corev1.ResourceList {
	rl := make(corev1.ResourceList, 3+len(s.kubeReservedOverrides))
	rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(kubeReservedCPUMilli(cpus*1000), resource.DecimalSI)
	rl[corev1.ResourceMemory] = *resource.NewQuantity((11*pods+255)*mebibyte, resource.BinarySI)
	rl[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(kubeReservedEphemeral, resource.BinarySI)
	for name, q := range s.kubeReservedOverrides {
		rl[name] = q.DeepCopy()
	}
	return rl
}

// kubeReservedCPUMilli reserves 6% of the first core, 1% of the second, 0.5%
// of the third and fourth and 0.25% of the rest, each share truncated to whole
// millicores.
func kubeReservedCPUMilli(milli int64) int64 {
	ranges := [...]struct {
		start, end int64
		share      float64
	}{
		{0, 1000, 0.06},
		{1000, 2000, 0.01},
		{2000, 4000, 0.005},
		{4000, math.MaxInt64, 0.0025},
	}
	var reserved int64
	for _, r := range ranges {
		if milli < r.start {
			break
		}
		span := min(milli, r.end) - r.start
		reserved += int64(float64(span) * r.share)
	}
	return reserved
}

// evictionThreshold is 100Mi of memory and 10% of ephemeral storage, unless
// kubelet.evictionHard or evictionSoft gives memory.available or
// nodefs.available: then the largest threshold they give, as Karpenter
// computes it (a hard threshold below the default lowers it).
func (s *settings) evictionThreshold(memory, storage resource.Quantity) corev1.ResourceList {
	mem := largestThreshold(s.evictMemory, memory, signal{quantity: resource.NewQuantity(defaultEvictionMemory, resource.BinarySI)})
	fs := largestThreshold(s.evictNodeFS, storage, signal{percent: defaultEvictionNodeFSPercent})
	return corev1.ResourceList{corev1.ResourceMemory: mem, corev1.ResourceEphemeralStorage: fs}
}

// largestThreshold is the largest of the signals' thresholds of capacity, or
// the default's when there are none.
func largestThreshold(signals []signal, capacity resource.Quantity, def signal) resource.Quantity {
	if len(signals) == 0 {
		return def.threshold(capacity)
	}
	largest := signals[0].threshold(capacity)
	for _, sig := range signals[1:] {
		if t := sig.threshold(capacity); t.Cmp(largest) > 0 {
			largest = t
		}
	}
	return largest
}

// threshold is the signal's quantity, or ceil(capacity * percent / 100) with
// 100% meaning no threshold, computed as Karpenter does, in float64.
func (sig signal) threshold(capacity resource.Quantity) resource.Quantity {
	if sig.quantity != nil {
		return sig.quantity.DeepCopy()
	}
	p := sig.percent
	if p == 100 {
		p = 0
	}
	v := int64(math.Ceil(capacity.AsApproximateFloat64() / 100 * p))
	return *resource.NewQuantity(v, resource.BinarySI)
}

// allocatable is capacity less kube-reserved, system-reserved and the eviction
// threshold. Overhead keys absent from capacity (pid) are ignored. As in
// Karpenter, the result is not clamped: overhead larger than capacity yields a
// negative quantity, and such a type fits no pod asking for that resource.
func allocatable(capacity corev1.ResourceList, o Overhead) corev1.ResourceList {
	out := make(corev1.ResourceList, len(capacity))
	for name, q := range capacity {
		a := q.DeepCopy()
		for _, rl := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
			if r, ok := rl[name]; ok {
				a.Sub(r)
			}
		}
		out[name] = a
	}
	return out
}

// copyResourceList returns a deep copy of rl, never nil.
func copyResourceList(rl corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(rl))
	for name, q := range rl {
		out[name] = q.DeepCopy()
	}
	return out
}
