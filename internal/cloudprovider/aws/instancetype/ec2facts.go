package instancetype

import (
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

// Extended resources of EC2 instance types.
const (
	ResourceNVIDIAGPU      = "nvidia.com/gpu"
	ResourceAMDGPU         = "amd.com/gpu"
	ResourceHabanaGaudi    = "habana.ai/gaudi"
	ResourceNeuron         = "aws.amazon.com/neuron"
	ResourceNeuronCore     = "aws.amazon.com/neuroncore"
	ResourceEFA            = "vpc.amazonaws.com/efa"
	ResourcePodENI         = "vpc.amazonaws.com/pod-eni"
	defaultIPv4PerENIGuess = 50
)

// ToEC2 returns the DescribeInstanceTypes entry EC2 would report for an
// instance type of the catalog, with every field the provider reads. It is the
// inverse of FromEC2 (up to facts EC2 does not report: the pod-eni count and
// the price), so tests and the local AWS endpoint can serve the catalog as EC2
// would. Every type supports on-demand and spot.
//
// Names are written in EC2's style where the catalog's lower-kebab form allows
// it (NVIDIA, "RTX PRO 4500"); FromEC2 lowers them back. Types whose VPC limits
// the catalog lacks get one network card whose limits yield the documented pod
// count: 50 addresses per interface when the count allows it, else one
// interface.
func ToEC2(t schema.InstanceType) ec2types.InstanceTypeInfo {
	arch := ec2types.ArchitectureTypeX8664
	if t.Arch == "arm64" {
		arch = ec2types.ArchitectureTypeArm64
	}
	info := ec2types.InstanceTypeInfo{
		InstanceType:                 ec2types.InstanceType(t.Name),
		BareMetal:                    aws.Bool(strings.Contains(t.Size, "metal")),
		Hypervisor:                   ec2types.InstanceTypeHypervisor(t.Hypervisor),
		CurrentGeneration:            aws.Bool(true),
		SupportedUsageClasses:        []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand, ec2types.UsageClassTypeSpot},
		SupportedVirtualizationTypes: []ec2types.VirtualizationType{ec2types.VirtualizationTypeHvm},
		VCpuInfo:                     &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(int32(t.CPU))},
		MemoryInfo:                   &ec2types.MemoryInfo{SizeInMiB: aws.Int64(t.MemoryMiB)},
		ProcessorInfo: &ec2types.ProcessorInfo{
			SupportedArchitectures: []ec2types.ArchitectureType{arch},
			Manufacturer:           aws.String(ec2Manufacturer(t.CPUManufacturer)),
		},
		NetworkInfo: toEC2Network(t),
		EbsInfo:     &ec2types.EbsInfo{EbsOptimizedSupport: ec2types.EbsOptimizedSupportUnsupported},
	}
	if t.CPUSustainedClockSpeedMhz > 0 {
		info.ProcessorInfo.SustainedClockSpeedInGhz = aws.Float64(float64(t.CPUSustainedClockSpeedMhz) / 1000)
	}
	if v := t.EBSBandwidthMbps; v != nil {
		info.EbsInfo = &ec2types.EbsInfo{
			EbsOptimizedSupport: ec2types.EbsOptimizedSupportDefault,
			EbsOptimizedInfo:    &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: aws.Int32(int32(*v))},
		}
	}
	if v := t.LocalNVMeGB; v != nil {
		info.InstanceStorageSupported = aws.Bool(true)
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{TotalSizeInGB: aws.Int64(*v), NvmeSupport: ec2types.EphemeralNvmeSupportRequired}
	}
	if g := t.GPU; g != nil {
		info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{
			Name:         aws.String(ec2Name(g.Name)),
			Manufacturer: aws.String(ec2Manufacturer(g.Manufacturer)),
			Count:        aws.Int32(int32(g.Count)),
			MemoryInfo:   &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(int32(g.MemoryMiB))},
		}}}
	}
	if a := t.Accelerator; a != nil {
		if n := t.ExtendedResources[ResourceNeuron]; n > 0 {
			info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{
				Name:     aws.String(ec2Name(a.Name)),
				Count:    aws.Int32(int32(n)),
				CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(int32(t.ExtendedResources[ResourceNeuronCore] / n))},
			}}}
		} else {
			info.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{
				Name:         aws.String(ec2Name(a.Name)),
				Manufacturer: aws.String(ec2Manufacturer(a.Manufacturer)),
				Count:        aws.Int32(int32(a.Count)),
			}}}
		}
	}
	return info
}

// toEC2Network returns the NetworkInfo of a catalog type: one network card
// with the default card's limits, EFA and the baseline bandwidth.
func toEC2Network(t schema.InstanceType) *ec2types.NetworkInfo {
	maxENIs, ipv4 := int64(0), int64(0)
	switch {
	case t.ENI != nil:
		maxENIs, ipv4 = t.ENI.MaxENIs, t.ENI.IPv4PerENI
	case t.Pods > 2 && (t.Pods-2)%(defaultIPv4PerENIGuess-1) == 0:
		maxENIs, ipv4 = (t.Pods-2)/(defaultIPv4PerENIGuess-1), defaultIPv4PerENIGuess
	case t.Pods > 2:
		maxENIs, ipv4 = 1, t.Pods-1
	}
	card := ec2types.NetworkCardInfo{NetworkCardIndex: aws.Int32(0), MaximumNetworkInterfaces: aws.Int32(int32(maxENIs))}
	if v := t.NetworkBandwidthMbps; v != nil {
		card.BaselineBandwidthInGbps = aws.Float64(float64(*v) / 1000)
	}
	n := &ec2types.NetworkInfo{
		DefaultNetworkCardIndex:      aws.Int32(0),
		MaximumNetworkCards:          aws.Int32(1),
		MaximumNetworkInterfaces:     aws.Int32(int32(maxENIs)),
		Ipv4AddressesPerInterface:    aws.Int32(int32(ipv4)),
		EncryptionInTransitSupported: aws.Bool(t.EncryptionInTransit),
		NetworkCards:                 []ec2types.NetworkCardInfo{card},
		EfaSupported:                 aws.Bool(false),
	}
	if efa := t.ExtendedResources[ResourceEFA]; efa > 0 {
		n.EfaSupported = aws.Bool(true)
		n.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(int32(efa))}
	}
	return n
}

// ec2Manufacturer writes a lower-kebab manufacturer as EC2 does.
func ec2Manufacturer(m string) string {
	switch m {
	case "intel":
		return "Intel"
	case "amd":
		return "AMD"
	case "aws":
		return "AWS"
	case "nvidia":
		return "NVIDIA"
	case "habana":
		return "Habana"
	case "qualcomm":
		return "Qualcomm"
	case "xilinx":
		return "Xilinx"
	}
	return m
}

// ec2Name writes a lower-kebab model name in capitals with spaces, which
// lowerKebab turns back into the same name.
func ec2Name(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", " "))
}

// lowerKebab is Karpenter's label form of EC2 names: lower case, spaces as dashes.
func lowerKebab(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), " ", "-")
}

// roundMhz converts GHz to whole MHz.
func roundMhz(ghz float64) int64 { return int64(math.Round(ghz * 1000)) }
