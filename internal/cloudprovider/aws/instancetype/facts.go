package instancetype

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

// categoryGeneration splits an instance type name into category (group 1)
// and generation (group 3): m7i-flex.large -> m, 7; u-6tb1.metal -> u, 1.
var categoryGeneration = regexp.MustCompile(`(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`)

// FromEC2 converts what DescribeInstanceTypes reports about a type into the
// raw facts the catalog formulas take. known holds the
// catalog's facts by name; it supplies what DescribeInstanceTypes does not
// report: the vpc.amazonaws.com/pod-eni count (trunk-interface limit) and the
// network bandwidth of the documented table (for types it lacks, the default
// card's baseline bandwidth is used). The result carries no price.
//
// It fails for a type whose name or architecture it cannot read; the
// provider skips such types.
func FromEC2(info ec2types.InstanceTypeInfo, known map[string]schema.InstanceType) (schema.InstanceType, error) {
	name := string(info.InstanceType)
	family, size, ok := strings.Cut(name, ".")
	if !ok || family == "" || size == "" {
		return schema.InstanceType{}, fmt.Errorf("instance type %q: name is not <family>.<size>", name)
	}
	m := categoryGeneration.FindStringSubmatch(name)
	if m == nil {
		return schema.InstanceType{}, fmt.Errorf("instance type %q: no category and generation in the name", name)
	}
	generation, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return schema.InstanceType{}, fmt.Errorf("instance type %q: generation %q: %w", name, m[3], err)
	}
	t := schema.InstanceType{
		Name:           name,
		Category:       m[1],
		Family:         family,
		Generation:     generation,
		Size:           size,
		Hypervisor:     string(info.Hypervisor),
		CapabilityFlex: strings.Contains(family, "-flex"),
	}
	if err := setProcessor(&t, info); err != nil {
		return schema.InstanceType{}, err
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		t.MemoryMiB = *info.MemoryInfo.SizeInMiB
	}
	setDevices(&t, info)
	setStorage(&t, info)
	setNetwork(&t, info, known)
	if len(t.ExtendedResources) == 0 {
		t.ExtendedResources = nil
	}
	return t, nil
}

// setProcessor sets vCPUs, architecture, manufacturer and clock speed.
func setProcessor(t *schema.InstanceType, info ec2types.InstanceTypeInfo) error {
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		t.CPU = int64(*info.VCpuInfo.DefaultVCpus)
	}
	p := info.ProcessorInfo
	if p == nil || len(p.SupportedArchitectures) == 0 {
		return fmt.Errorf("instance type %q: no processor architecture", t.Name)
	}
	switch a := p.SupportedArchitectures[0]; a {
	case ec2types.ArchitectureTypeX8664:
		t.Arch = "amd64"
	case ec2types.ArchitectureTypeArm64:
		t.Arch = "arm64"
	default:
		return fmt.Errorf("instance type %q: unsupported architecture %q", t.Name, a)
	}
	if p.Manufacturer != nil {
		t.CPUManufacturer = lowerKebab(*p.Manufacturer)
	}
	if p.SustainedClockSpeedInGhz != nil {
		t.CPUSustainedClockSpeedMhz = roundMhz(*p.SustainedClockSpeedInGhz)
	}
	return nil
}

// setDevices sets the GPU and accelerator labels and their extended resources.
func setDevices(t *schema.InstanceType, info ec2types.InstanceTypeInfo) {
	add := func(name string, n int64) {
		if n <= 0 {
			return
		}
		if t.ExtendedResources == nil {
			t.ExtendedResources = map[string]int64{}
		}
		t.ExtendedResources[name] += n
	}
	if g := info.GpuInfo; g != nil {
		for _, d := range g.Gpus {
			n := int64(deref(d.Count))
			switch lowerKebab(deref(d.Manufacturer)) {
			case "nvidia":
				add(ResourceNVIDIAGPU, n)
			case "amd":
				add(ResourceAMDGPU, n)
			case "habana":
				add(ResourceHabanaGaudi, n)
			}
		}
		if len(g.Gpus) == 1 {
			d := g.Gpus[0]
			t.GPU = &schema.GPU{
				Name:         lowerKebab(deref(d.Name)),
				Manufacturer: lowerKebab(deref(d.Manufacturer)),
				Count:        int64(deref(d.Count)),
			}
			if d.MemoryInfo != nil {
				t.GPU.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
			}
		}
	}
	if n := info.NeuronInfo; n != nil && len(n.NeuronDevices) > 0 {
		for _, d := range n.NeuronDevices {
			add(ResourceNeuron, int64(deref(d.Count)))
		}
		d := n.NeuronDevices[0]
		if d.CoreInfo != nil {
			add(ResourceNeuronCore, int64(deref(d.Count))*int64(deref(d.CoreInfo.Count)))
		}
		t.Accelerator = &schema.Accelerator{Name: lowerKebab(deref(d.Name)), Manufacturer: "aws", Count: int64(deref(d.Count))}
	} else if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		d := a.Accelerators[0]
		t.Accelerator = &schema.Accelerator{Name: lowerKebab(deref(d.Name)), Manufacturer: lowerKebab(deref(d.Manufacturer)), Count: int64(deref(d.Count))}
	}
}

// setStorage sets the local NVMe size and the EBS bandwidth.
func setStorage(t *schema.InstanceType, info ec2types.InstanceTypeInfo) {
	if s := info.InstanceStorageInfo; s != nil && s.TotalSizeInGB != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.NvmeSupport != "" {
		t.LocalNVMeGB = new(*s.TotalSizeInGB)
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		t.EBSBandwidthMbps = new(int64(*e.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
}

// setNetwork sets encryption in transit, network bandwidth, the VPC limits of
// the default card and the pods they allow, EFA and pod-eni.
func setNetwork(t *schema.InstanceType, info ec2types.InstanceTypeInfo, known map[string]schema.InstanceType) {
	k, isKnown := known[t.Name]
	if isKnown {
		if v := k.NetworkBandwidthMbps; v != nil {
			t.NetworkBandwidthMbps = new(*v)
		}
		if n := k.ExtendedResources[ResourcePodENI]; n > 0 {
			if t.ExtendedResources == nil {
				t.ExtendedResources = map[string]int64{}
			}
			t.ExtendedResources[ResourcePodENI] = n
		}
	}
	n := info.NetworkInfo
	if n == nil {
		return
	}
	t.EncryptionInTransit = deref(n.EncryptionInTransitSupported)
	card := defaultCard(n)
	if !isKnown && card != nil && card.BaselineBandwidthInGbps != nil {
		t.NetworkBandwidthMbps = new(int64(*card.BaselineBandwidthInGbps * 1000))
	}
	maxENIs := int64(deref(n.MaximumNetworkInterfaces))
	if card != nil && card.MaximumNetworkInterfaces != nil {
		maxENIs = int64(*card.MaximumNetworkInterfaces)
	}
	if ipv4 := int64(deref(n.Ipv4AddressesPerInterface)); maxENIs > 0 && ipv4 > 0 {
		t.ENI = &schema.ENI{MaxENIs: maxENIs, IPv4PerENI: ipv4}
		t.Pods = maxENIs*(ipv4-1) + 2
	}
	if e := n.EfaInfo; e != nil && deref(e.MaximumEfaInterfaces) > 0 {
		if t.ExtendedResources == nil {
			t.ExtendedResources = map[string]int64{}
		}
		t.ExtendedResources[ResourceEFA] = int64(*e.MaximumEfaInterfaces)
	}
}

// defaultCard returns the network card DefaultNetworkCardIndex names, nil
// when there is none.
func defaultCard(n *ec2types.NetworkInfo) *ec2types.NetworkCardInfo {
	idx := deref(n.DefaultNetworkCardIndex)
	for i := range n.NetworkCards {
		if deref(n.NetworkCards[i].NetworkCardIndex) == idx {
			return &n.NetworkCards[i]
		}
	}
	return nil
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
