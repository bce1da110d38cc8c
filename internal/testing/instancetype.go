package testing

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
)

// InstanceTypeWrapper builds an instance type on top of fake.NewInstanceType.
type InstanceTypeWrapper struct {
	opts  fake.InstanceTypeOptions
	price float64
}

// MakeInstanceType returns a type with 4 cpu, 8Gi memory, 110 pods, linux
// amd64, offered at PriceFromResources in the fake provider's five default
// offerings, with 100m cpu and 10Mi memory reserved.
func MakeInstanceType(name string) *InstanceTypeWrapper {
	return &InstanceTypeWrapper{opts: fake.InstanceTypeOptions{
		Name: name, OperatingSystems: []string{string(corev1.Linux)},
		Resources: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}}
}

// Resource sets a capacity, for example Resource("nvidia.com/gpu", "1").
func (w *InstanceTypeWrapper) Resource(name, qty string) *InstanceTypeWrapper {
	w.opts.Resources[corev1.ResourceName(name)] = resource.MustParse(qty)
	return w
}

// CPU sets the cpu capacity.
func (w *InstanceTypeWrapper) CPU(qty string) *InstanceTypeWrapper { return w.Resource("cpu", qty) }

// Memory sets the memory capacity.
func (w *InstanceTypeWrapper) Memory(qty string) *InstanceTypeWrapper {
	return w.Resource("memory", qty)
}

// Pods sets the pods capacity.
func (w *InstanceTypeWrapper) Pods(qty string) *InstanceTypeWrapper { return w.Resource("pods", qty) }

// Arch sets the architecture.
func (w *InstanceTypeWrapper) Arch(arch string) *InstanceTypeWrapper {
	w.opts.Architecture = arch
	return w
}

// Label adds a label of the type.
func (w *InstanceTypeWrapper) Label(k, v string) *InstanceTypeWrapper {
	if w.opts.Labels == nil {
		w.opts.Labels = map[string]string{}
	}
	w.opts.Labels[k] = v
	return w
}

// Price sets the price of every default offering.
func (w *InstanceTypeWrapper) Price(p float64) *InstanceTypeWrapper {
	w.price = p
	return w
}

// Offering adds an offering; the first call replaces the default offerings.
func (w *InstanceTypeWrapper) Offering(zone, capacityType string, price float64, available bool) *InstanceTypeWrapper {
	if w.opts.Offerings == nil {
		w.opts.Offerings = []cloudprovider.Offering{}
	}
	w.opts.Offerings = append(w.opts.Offerings, cloudprovider.Offering{Zone: zone, CapacityType: capacityType, Price: price, Available: available})
	return w
}

// NoOfferings leaves the type without any offering.
func (w *InstanceTypeWrapper) NoOfferings() *InstanceTypeWrapper {
	w.opts.Offerings = []cloudprovider.Offering{}
	return w
}

// Obj builds the instance type.
func (w *InstanceTypeWrapper) Obj() *cloudprovider.InstanceType {
	opts := w.opts
	opts.Resources = w.opts.Resources.DeepCopy()
	if opts.Offerings == nil && w.price > 0 {
		for _, o := range []struct{ zone, ct string }{
			{fake.Zone1, v1.CapacityTypeSpot}, {fake.Zone2, v1.CapacityTypeSpot},
			{fake.Zone1, v1.CapacityTypeOnDemand}, {fake.Zone2, v1.CapacityTypeOnDemand}, {fake.Zone3, v1.CapacityTypeOnDemand},
		} {
			opts.Offerings = append(opts.Offerings, cloudprovider.Offering{Zone: o.zone, CapacityType: o.ct, Price: w.price, Available: true})
		}
	}
	return fake.NewInstanceType(opts)
}

// SmallMediumLarge is the instance-type set the integration harnesses
// share: small (2 cpu), medium (4) and large (8), 2Gi per cpu and 110
// pods, on demand at $0.05 per cpu-hour in the fake provider's first two
// zones, and, with spot, spot at 70% of that.
func SmallMediumLarge(spot bool) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, s := range []struct {
		name  string
		cpu   int
		price float64
	}{{"small", 2, 0.1}, {"medium", 4, 0.2}, {"large", 8, 0.4}} {
		w := MakeInstanceType(s.name).CPU(strconv.Itoa(s.cpu)).Memory(strconv.Itoa(2*s.cpu) + "Gi").Pods("110")
		for _, z := range []string{fake.Zone1, fake.Zone2} {
			w = w.Offering(z, v1.CapacityTypeOnDemand, s.price, true)
			if spot {
				w = w.Offering(z, v1.CapacityTypeSpot, 0.7*s.price, true)
			}
		}
		out = append(out, w.Obj())
	}
	return out
}
