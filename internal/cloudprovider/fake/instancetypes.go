package fake

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Zones of the fake instance types' default offerings.
const (
	Zone1 = "zone-1"
	Zone2 = "zone-2"
	Zone3 = "zone-3"
)

// InstanceTypeOptions describe one fake instance type. Zero fields get the
// defaults of the reference benchmark: amd64; linux, windows and darwin; the
// five default offerings (spot in zone-1 and zone-2, on-demand in zone-1,
// zone-2 and zone-3) at PriceFromResources; kube-reserved 100m cpu, 10Mi memory.
type InstanceTypeOptions struct {
	Name             string
	Architecture     string
	OperatingSystems []string
	Resources        corev1.ResourceList
	Offerings        []cloudprovider.Offering
	// Labels are extra single-value labels of the type.
	Labels map[string]string
}

// NewInstanceType builds an instance type from options.
func NewInstanceType(opts InstanceTypeOptions) *cloudprovider.InstanceType {
	if opts.Architecture == "" {
		opts.Architecture = "amd64"
	}
	if len(opts.OperatingSystems) == 0 {
		opts.OperatingSystems = []string{string(corev1.Linux), string(corev1.Windows), "darwin"}
	}
	if opts.Offerings == nil {
		price := PriceFromResources(opts.Resources)
		opts.Offerings = []cloudprovider.Offering{
			{Zone: Zone1, CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
			{Zone: Zone2, CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
			{Zone: Zone1, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: Zone2, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: Zone3, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
		}
	}
	var zones, capacityTypes []string
	for _, o := range opts.Offerings {
		if o.Available {
			zones = append(zones, o.Zone)
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
	}
	reqs := []requirements.Requirement{
		requirements.In(corev1.LabelInstanceTypeStable, opts.Name),
		requirements.In(corev1.LabelArchStable, opts.Architecture),
		requirements.In(corev1.LabelOSStable, opts.OperatingSystems...),
		requirements.In(corev1.LabelTopologyZone, zones...),
		requirements.In(v1.CapacityTypeLabelKey, capacityTypes...),
	}
	for k, v := range opts.Labels {
		reqs = append(reqs, requirements.In(k, v))
	}
	return &cloudprovider.InstanceType{
		Name:         opts.Name,
		Requirements: requirements.NewRequirements(reqs...),
		Offerings:    opts.Offerings,
		Capacity:     opts.Resources,
		Overhead: &cloudprovider.InstanceTypeOverhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			},
		},
	}
}

// InstanceTypes returns the n instance types of the reference scheduling
// benchmark: fake-it-<i> with i+1 cpu, 2(i+1) GiB memory and 10(i+1) pods.
func InstanceTypes(n int) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, 0, n)
	for i := range n {
		out = append(out, NewInstanceType(InstanceTypeOptions{
			Name: fmt.Sprintf("fake-it-%d", i),
			Resources: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(int64(i+1), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(i+1)*2<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(i+1)*10, resource.DecimalSI),
			},
		}))
	}
	return out
}

// PriceFromResources prices a type at 0.1 $/h per cpu plus 0.1 $/h per 1e9
// bytes of memory, the reference benchmark's formula.
func PriceFromResources(resources corev1.ResourceList) float64 {
	price := 0.0
	if q, ok := resources[corev1.ResourceCPU]; ok {
		price += 0.1 * q.AsApproximateFloat64()
	}
	if q, ok := resources[corev1.ResourceMemory]; ok {
		price += 0.1 * q.AsApproximateFloat64() / 1e9
	}
	return price
}
