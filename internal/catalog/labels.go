package catalog

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

// Labels of the karpenter.k8s.aws group that describe an instance type. Users
// select nodes with them (for example instance-category In [c, m, r]), so the
// names are Karpenter's.
const (
	LabelInstanceCategory                     = "karpenter.k8s.aws/instance-category"
	LabelInstanceFamily                       = "karpenter.k8s.aws/instance-family"
	LabelInstanceGeneration                   = "karpenter.k8s.aws/instance-generation"
	LabelInstanceSize                         = "karpenter.k8s.aws/instance-size"
	LabelInstanceHypervisor                   = "karpenter.k8s.aws/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
	LabelInstanceCapabilityFlex               = "karpenter.k8s.aws/instance-capability-flex"
	LabelInstanceCPU                          = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceCPUManufacturer              = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = "karpenter.k8s.aws/instance-memory"
	LabelInstanceLocalNVMe                    = "karpenter.k8s.aws/instance-local-nvme"
	LabelInstanceNetworkBandwidth             = "karpenter.k8s.aws/instance-network-bandwidth"
	LabelInstanceEBSBandwidth                 = "karpenter.k8s.aws/instance-ebs-bandwidth"
	LabelInstanceGPUName                      = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUManufacturer              = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMemory                    = "karpenter.k8s.aws/instance-gpu-memory"
	LabelInstanceAcceleratorName              = "karpenter.k8s.aws/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = "karpenter.k8s.aws/instance-accelerator-count"
	LabelInstanceTenancy                      = "karpenter.k8s.aws/instance-tenancy"
)

// TenancyDefault is the instance-tenancy of every type: Dovetail launches on
// shared hardware only, so a requirement for dedicated tenancy matches no
// type (and says so) instead of being ignored.
const TenancyDefault = "default"

// WellKnownLabels returns, sorted, every label key the catalog may set on an
// instance type, plus topology.kubernetes.io/zone and karpenter.sh/capacity-type,
// which come from Offerings. A scheduler should treat a key of this list that a
// type (or offering) lacks as DoesNotExist, so that a requirement such as
// instance-gpu-count Exists or Gt rules the type out instead of ignoring the key.
// The caller owns the returned slice.
func WellKnownLabels() []string {
	keys := []string{
		corev1.LabelInstanceTypeStable,
		corev1.LabelArchStable,
		corev1.LabelOSStable,
		corev1.LabelWindowsBuild,
		corev1.LabelTopologyRegion,
		corev1.LabelTopologyZone,
		karpv1.CapacityTypeLabelKey,
		LabelInstanceCategory,
		LabelInstanceFamily,
		LabelInstanceGeneration,
		LabelInstanceSize,
		LabelInstanceHypervisor,
		LabelInstanceEncryptionInTransitSupported,
		LabelInstanceCapabilityFlex,
		LabelInstanceCPU,
		LabelInstanceCPUManufacturer,
		LabelInstanceCPUSustainedClockSpeedMhz,
		LabelInstanceMemory,
		LabelInstanceLocalNVMe,
		LabelInstanceNetworkBandwidth,
		LabelInstanceEBSBandwidth,
		LabelInstanceGPUName,
		LabelInstanceGPUManufacturer,
		LabelInstanceGPUCount,
		LabelInstanceGPUMemory,
		LabelInstanceAcceleratorName,
		LabelInstanceAcceleratorManufacturer,
		LabelInstanceAcceleratorCount,
		LabelInstanceTenancy,
	}
	slices.Sort(keys)
	return keys
}

// label is one key and value.
type label struct{ key, value string }

// staticLabels returns the labels of t that no Options change, in the order
// Karpenter documents them. They are computed once, when the catalog is decoded.
func staticLabels(t *schema.InstanceType) []label {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	ls := []label{
		{corev1.LabelInstanceTypeStable, t.Name},
		{corev1.LabelArchStable, t.Arch},
		{LabelInstanceCategory, t.Category},
		{LabelInstanceFamily, t.Family},
		{LabelInstanceGeneration, itoa(t.Generation)},
		{LabelInstanceSize, t.Size},
		{LabelInstanceHypervisor, t.Hypervisor},
		{LabelInstanceEncryptionInTransitSupported, strconv.FormatBool(t.EncryptionInTransit)},
		{LabelInstanceCapabilityFlex, strconv.FormatBool(t.CapabilityFlex)},
		{LabelInstanceCPU, itoa(t.CPU)},
		{LabelInstanceCPUManufacturer, t.CPUManufacturer},
		{LabelInstanceCPUSustainedClockSpeedMhz, itoa(t.CPUSustainedClockSpeedMhz)},
		{LabelInstanceMemory, itoa(t.MemoryMiB)},
		{LabelInstanceTenancy, TenancyDefault},
	}
	if v := t.LocalNVMeGB; v != nil {
		ls = append(ls, label{LabelInstanceLocalNVMe, itoa(*v)})
	}
	if v := t.NetworkBandwidthMbps; v != nil {
		ls = append(ls, label{LabelInstanceNetworkBandwidth, itoa(*v)})
	}
	if v := t.EBSBandwidthMbps; v != nil {
		ls = append(ls, label{LabelInstanceEBSBandwidth, itoa(*v)})
	}
	if g := t.GPU; g != nil {
		ls = append(ls,
			label{LabelInstanceGPUName, g.Name},
			label{LabelInstanceGPUManufacturer, g.Manufacturer},
			label{LabelInstanceGPUCount, itoa(g.Count)},
			label{LabelInstanceGPUMemory, itoa(g.MemoryMiB)},
		)
	}
	if a := t.Accelerator; a != nil {
		ls = append(ls,
			label{LabelInstanceAcceleratorName, a.Name},
			label{LabelInstanceAcceleratorManufacturer, a.Manufacturer},
			label{LabelInstanceAcceleratorCount, itoa(a.Count)},
		)
	}
	return ls
}

// labels returns a fresh label map for an instance type with the given static
// labels under settings s.
func (s *settings) labels(static []label) map[string]string {
	m := make(map[string]string, len(static)+3)
	for _, l := range static {
		m[l.key] = l.value
	}
	m[corev1.LabelOSStable] = s.family.os
	m[corev1.LabelTopologyRegion] = s.region
	if b := s.family.windowsBuild; b != "" {
		m[corev1.LabelWindowsBuild] = b
	}
	return m
}
