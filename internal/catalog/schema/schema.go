// Package schema defines the layout of the generated catalog file,
// internal/catalog/zz_generated.catalog.json. The generator (internal/catalog/gen)
// writes it and the catalog package decodes it; sharing one definition keeps the
// two from drifting apart.
//
// Each InstanceType holds raw facts only (what EC2 reports and the static
// on-demand price), never values that depend on an AMI family or kubelet
// setting: the catalog package computes those at load time. catalog.Facts
// hands them out, for the local AWS endpoint to answer DescribeInstanceTypes
// with and for the AWS provider's tests to check its conversion against.
package schema

// File is the whole generated catalog.
type File struct {
	// GeneratedBy names the generator so that nobody edits the file by hand.
	GeneratedBy string `json:"generatedBy"`
	// PriceRegion is the region whose on-demand prices the file carries.
	PriceRegion string `json:"priceRegion"`
	// InstanceTypes is sorted by name, one entry per type.
	InstanceTypes []InstanceType `json:"instanceTypes"`
}

// InstanceType is the raw facts about one EC2 instance type.
type InstanceType struct {
	// Name is the instance type, e.g. "m5.large".
	Name string `json:"name"`
	// Category is the letters before the generation, e.g. "m" ("u" for u-6tb1).
	Category string `json:"category"`
	// Family is the part of the name before the dot, e.g. "m5".
	Family string `json:"family"`
	// Generation is the number after the category, e.g. 5.
	Generation int64 `json:"generation"`
	// Size is the part of the name after the dot, e.g. "large".
	Size string `json:"size"`
	// Hypervisor is "nitro", "xen" or "" for bare metal.
	Hypervisor string `json:"hypervisor"`
	// EncryptionInTransit tells whether the network encrypts traffic in transit.
	EncryptionInTransit bool `json:"encryptionInTransit,omitempty"`
	// CapabilityFlex marks the "-flex" families.
	CapabilityFlex bool `json:"capabilityFlex,omitempty"`
	// CPU is the default number of vCPUs.
	CPU int64 `json:"cpu"`
	// CPUManufacturer is "intel", "amd" or "aws".
	CPUManufacturer string `json:"cpuManufacturer"`
	// CPUSustainedClockSpeedMhz is the sustained clock speed in MHz; 0 where
	// EC2 reports none (c1, m1, m2, t1), as Karpenter labels it.
	CPUSustainedClockSpeedMhz int64 `json:"cpuSustainedClockSpeedMhz"`
	// MemoryMiB is the memory EC2 reports, before any overhead.
	MemoryMiB int64 `json:"memoryMiB"`
	// Arch is the kubernetes.io/arch value, "amd64" or "arm64".
	Arch string `json:"arch"`
	// GPU is set when EC2 reports exactly one GPU model.
	GPU *GPU `json:"gpu,omitempty"`
	// Accelerator is set for a single inference accelerator or Neuron device model.
	Accelerator *Accelerator `json:"accelerator,omitempty"`
	// LocalNVMeGB is the NVMe instance-store size in GB (decimal), when present.
	LocalNVMeGB *int64 `json:"localNVMeGB,omitempty"`
	// NetworkBandwidthMbps is absent when EC2 publishes only a vague value.
	NetworkBandwidthMbps *int64 `json:"networkBandwidthMbps,omitempty"`
	// EBSBandwidthMbps is the maximum EBS bandwidth of EBS-optimized types.
	EBSBandwidthMbps *int64 `json:"ebsBandwidthMbps,omitempty"`
	// ENI holds the VPC limits used to compute ENI-limited pod density. It is
	// absent for the few types the upstream VPC-limits table does not list.
	ENI *ENI `json:"eni,omitempty"`
	// Pods is the ENI-limited pod count with no reserved ENIs, as documented
	// upstream. It is the only pod figure for types without ENI.
	Pods int64 `json:"pods"`
	// ExtendedResources maps extended resource names (nvidia.com/gpu,
	// vpc.amazonaws.com/efa, vpc.amazonaws.com/pod-eni, ...) to their
	// non-zero counts.
	ExtendedResources map[string]int64 `json:"extendedResources,omitempty"`
	// OnDemandPrice is the on-demand price in USD per hour in PriceRegion,
	// absent when the source has none.
	OnDemandPrice *float64 `json:"onDemandPrice,omitempty"`
}

// GPU describes the single GPU model of an instance type.
type GPU struct {
	// Name is the lower-kebab model name, e.g. "a10g".
	Name string `json:"name"`
	// Manufacturer is the lower-kebab manufacturer, e.g. "nvidia".
	Manufacturer string `json:"manufacturer"`
	// Count is the number of GPUs. It is 0 for the fractional-GPU types (g6f,
	// gr6f): their GPU labels exist but no nvidia.com/gpu resource does.
	Count int64 `json:"count"`
	// MemoryMiB is the memory of one GPU.
	MemoryMiB int64 `json:"memoryMiB"`
}

// Accelerator describes the single accelerator model of an instance type.
type Accelerator struct {
	// Name is the lower-kebab model name, e.g. "inferentia2".
	Name string `json:"name"`
	// Manufacturer is e.g. "aws" or "qualcomm".
	Manufacturer string `json:"manufacturer"`
	// Count is the number of devices.
	Count int64 `json:"count"`
}

// ENI holds the VPC limits of the default network card.
type ENI struct {
	// MaxENIs is the maximum number of network interfaces on the default card.
	MaxENIs int64 `json:"maxENIs"`
	// IPv4PerENI is the number of IPv4 addresses per interface.
	IPv4PerENI int64 `json:"ipv4PerENI"`
}
