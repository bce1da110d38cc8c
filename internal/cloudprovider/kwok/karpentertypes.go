package kwok

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// InstanceTypeSet names the instance types a kwok provider offers.
type InstanceTypeSet string

const (
	// InstanceTypesEC2 is the embedded EC2 catalog (the default): EC2 names,
	// shapes, labels and on-demand prices in the catalog's region and zones.
	InstanceTypesEC2 InstanceTypeSet = "ec2"
	// InstanceTypesKarpenterKWOK is the set Karpenter's kwok provider
	// generates (see KarpenterKWOKInstanceTypes), so that manifests written
	// for it launch unchanged.
	InstanceTypesKarpenterKWOK InstanceTypeSet = "karpenter-kwok"
)

// InstanceTypeSets lists the valid InstanceTypeSet values, the default first.
func InstanceTypeSets() []InstanceTypeSet {
	return []InstanceTypeSet{InstanceTypesEC2, InstanceTypesKarpenterKWOK}
}

// Labels of Karpenter's kwok instance types; Karpenter's kwok provider puts
// them on its nodes and NodePools select on them.
const (
	// InstanceSizeLabelKey is the size: the vCPU count for these names.
	InstanceSizeLabelKey = kwokv1alpha1.Group + "/instance-size"
	// InstanceFamilyLabelKey is the family: c, s or m.
	InstanceFamilyLabelKey = kwokv1alpha1.Group + "/instance-family"
	// InstanceCPULabelKey is the vCPU count.
	InstanceCPULabelKey = kwokv1alpha1.Group + "/instance-cpu"
	// InstanceMemoryLabelKey is the memory, as a quantity such as 32Gi.
	InstanceMemoryLabelKey = kwokv1alpha1.Group + "/instance-memory"
)

// KarpenterKWOKZones are the zones of Karpenter's kwok offerings.
func KarpenterKWOKZones() []string {
	return []string{"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"}
}

// karpenterKWOKFamilies maps each family to its GiB of memory per vCPU:
// compute, standard and memory-optimised.
var karpenterKWOKFamilies = []struct {
	name      string
	gibPerCPU int64
}{{"c", 2}, {"s", 4}, {"m", 8}}

// karpenterKWOKCPUs are the vCPU counts of every family.
func karpenterKWOKCPUs() []int64 {
	return []int64{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256}
}

// Facts of Karpenter's kwok instance types that do not vary by type.
const (
	// karpenterKWOKMaxPods caps the pods a node takes at 16 per vCPU.
	karpenterKWOKPodsPerCPU = 16
	karpenterKWOKMaxPods    = 1024
	// Prices are per hour: this much per vCPU plus this much per GB
	// (10^9 bytes) of memory on demand; spot costs karpenterKWOKSpotFactor
	// of that.
	karpenterKWOKPricePerCPU = 0.025
	karpenterKWOKPricePerGB  = 0.001
	karpenterKWOKSpotFactor  = 0.7
)

// KarpenterKWOKInstanceTypes returns the 144 instance types of Karpenter's
// kwok provider (Karpenter v1), sorted by name. Each is a family (c, s or m:
// 2, 4 or 8 GiB per vCPU), a vCPU count (1 to 256), an architecture (amd64,
// arm64) and an OS (linux, windows), named "<family>-<cpu>x-<arch>-<os>",
// for example c-16x-amd64-linux. Capacity: the vCPUs, the memory,
// 16 pods per vCPU up to 1024, and 20Gi of ephemeral storage; the kubelet
// reserves 100m of CPU and 10Mi of memory. Offerings: every zone of
// KarpenterKWOKZones, spot and on-demand, all available, on demand at
// 0.025 per vCPU plus 0.001 per GB of memory, spot at 70% of that. The
// labels are the instance type, architecture, OS, zone, capacity type and
// the four karpenter.kwok.sh/instance-* labels.
func KarpenterKWOKInstanceTypes() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, cpu := range karpenterKWOKCPUs() {
		for _, family := range karpenterKWOKFamilies {
			for _, os := range []string{string(corev1.Linux), string(corev1.Windows)} {
				for _, arch := range []string{"amd64", "arm64"} {
					out = append(out, karpenterKWOKInstanceType(family.name, cpu, cpu*family.gibPerCPU, arch, os))
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *cloudprovider.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// karpenterKWOKInstanceType builds one type of the set.
func karpenterKWOKInstanceType(family string, cpu, memoryGiB int64, arch, os string) *cloudprovider.InstanceType {
	name := fmt.Sprintf("%s-%dx-%s-%s", family, cpu, arch, os)
	cpuQ := *resource.NewQuantity(cpu, resource.DecimalSI)
	memory := resource.MustParse(strconv.FormatInt(memoryGiB, 10) + "Gi")
	onDemand := karpenterKWOKPricePerCPU*float64(cpu) + karpenterKWOKPricePerGB*float64(memory.Value())/1e9
	var offerings []cloudprovider.Offering
	for _, zone := range KarpenterKWOKZones() {
		offerings = append(offerings,
			cloudprovider.Offering{Zone: zone, CapacityType: v1.CapacityTypeSpot, Price: onDemand * karpenterKWOKSpotFactor, Available: true},
			cloudprovider.Offering{Zone: zone, CapacityType: v1.CapacityTypeOnDemand, Price: onDemand, Available: true},
		)
	}
	reqs := []requirements.Requirement{
		requirements.In(corev1.LabelInstanceTypeStable, name),
		requirements.In(corev1.LabelArchStable, arch),
		requirements.In(corev1.LabelOSStable, os),
		requirements.In(InstanceSizeLabelKey, cpuQ.String()),
		requirements.In(InstanceFamilyLabelKey, family),
		requirements.In(InstanceCPULabelKey, cpuQ.String()),
		requirements.In(InstanceMemoryLabelKey, memory.String()),
	}
	reqs = append(reqs, ec2types.OfferingRequirements(offerings)...)
	return &cloudprovider.InstanceType{
		Name:         name,
		Requirements: requirements.NewRequirements(reqs...),
		Offerings:    offerings,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              cpuQ,
			corev1.ResourceMemory:           memory,
			corev1.ResourcePods:             *resource.NewQuantity(min(karpenterKWOKPodsPerCPU*cpu, karpenterKWOKMaxPods), resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
		},
		Overhead: &cloudprovider.InstanceTypeOverhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			},
		},
	}
}
