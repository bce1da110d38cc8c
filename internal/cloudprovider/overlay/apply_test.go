package overlay

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
)

// types are two families in two zones, spot and on-demand, at $1 and $2.
func types() []*cloudprovider.InstanceType {
	offerings := func(price float64) []cloudprovider.Offering {
		return []cloudprovider.Offering{
			{Zone: fake.Zone1, CapacityType: v1.CapacityTypeSpot, Price: price / 2, Available: true},
			{Zone: fake.Zone1, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: fake.Zone2, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: false},
		}
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	return []*cloudprovider.InstanceType{
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "c5.xlarge", Resources: res, Offerings: offerings(1),
			Labels: map[string]string{"karpenter.k8s.aws/instance-family": "c5"}}),
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "m5.xlarge", Resources: res, Offerings: offerings(2),
			Labels: map[string]string{"karpenter.k8s.aws/instance-family": "m5"}}),
	}
}

func pool(name string, labels map[string]string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.ObjectMeta.Labels = labels
	return np
}

func mustParse(t *testing.T, name string, weight int32, reqs []v1alpha1.NodeSelectorRequirement, mutate func(*v1alpha1.NodeOverlaySpec)) Overlay {
	t.Helper()
	no := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{Requirements: reqs}}
	if weight != 0 {
		no.Spec.Weight = ptr.To(weight)
	}
	if mutate != nil {
		mutate(&no.Spec)
	}
	o, err := Parse(no)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestMatching(t *testing.T) {
	t.Parallel()
	c5 := types()[0]
	team := pool("team-a", map[string]string{"team": "a"})
	for _, tc := range []struct {
		name string
		reqs []v1alpha1.NodeSelectorRequirement
		want []int
	}{
		{"no requirements: every offering", nil, []int{0, 1, 2}},
		{"instance family", []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "c5")}, []int{0, 1, 2}},
		{"other family", []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5")}, nil},
		{"capacity type", []v1alpha1.NodeSelectorRequirement{req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")}, []int{1, 2}},
		{"zone, unavailable offering included", []v1alpha1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.Zone2)}, []int{2}},
		{"zone and capacity type", []v1alpha1.NodeSelectorRequirement{
			req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.Zone1), req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, "spot")}, []int{1}},
		{"nodepool name", []v1alpha1.NodeSelectorRequirement{req(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "team-a")}, []int{0, 1, 2}},
		{"other nodepool", []v1alpha1.NodeSelectorRequirement{req(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default")}, nil},
		{"template label", []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "a")}, []int{0, 1, 2}},
		{"other template label value", []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "b")}, nil},
		{"label nobody sets", []v1alpha1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpExists)}, nil},
		{"label nobody sets, NotIn", []v1alpha1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpNotIn, "true")}, []int{0, 1, 2}},
		{"reservation on an offering without one", []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/capacity-reservation-id", corev1.NodeSelectorOpExists)}, nil},
		{"a value the type does not have", []v1alpha1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := mustParse(t, "o", 0, tc.reqs, nil)
			if got := Matching(team, c5, o.Requirements); !slices.Equal(got, tc.want) {
				t.Errorf("matching offerings %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	spot := []v1alpha1.NodeSelectorRequirement{req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")}
	c5 := []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "c5")}
	m5 := []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5")}
	onlyPoolB := []v1alpha1.NodeSelectorRequirement{req(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "b")}
	price := func(p string) func(*v1alpha1.NodeOverlaySpec) {
		return func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To(p) }
	}
	fpga := func(s *v1alpha1.NodeOverlaySpec) {
		s.Capacity = corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}
	}
	pools := []Pool{{NodePool: pool("a", nil), InstanceTypes: types()}, {NodePool: pool("b", nil), InstanceTypes: types()}}
	for _, tc := range []struct {
		name      string
		overlays  func(t *testing.T) []Overlay
		applied   []string
		conflicts map[string]string // left out -> applied instead
	}{
		{"different weights never conflict", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "low", 1, spot, price("1")), mustParse(t, "high", 2, spot, price("2"))}
		}, []string{"high", "low"}, nil},
		{"same weight, same offerings: the name that sorts last wins", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "alpha", 5, spot, price("1")), mustParse(t, "beta", 5, c5, price("2"))}
		}, []string{"beta"}, map[string]string{"alpha": "beta"}},
		{"same weight, disjoint offerings", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "alpha", 5, c5, price("1")), mustParse(t, "beta", 5, m5, price("2"))}
		}, []string{"beta", "alpha"}, nil},
		{"same weight, one prices, the other adds capacity", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "alpha", 5, c5, price("1")), mustParse(t, "beta", 5, c5, fpga)}
		}, []string{"beta", "alpha"}, nil},
		{"same weight, same resource", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "alpha", 5, c5, fpga), mustParse(t, "beta", 5, spot, fpga)}
		}, []string{"beta"}, map[string]string{"alpha": "beta"}},
		{"a conflict in one pool leaves the overlay out of every pool", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "alpha", 5, c5, price("1")), mustParse(t, "beta", 5, onlyPoolB, price("2"))}
		}, []string{"beta"}, map[string]string{"alpha": "beta"}},
		{"an overlay matching nothing conflicts with nothing", func(t *testing.T) []Overlay {
			return []Overlay{mustParse(t, "alpha", 5, []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "x")}, price("1")),
				mustParse(t, "beta", 5, spot, price("2"))}
		}, []string{"beta", "alpha"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := Evaluate(pools, tc.overlays(t))
			var applied []string
			for _, o := range ev.Applied {
				applied = append(applied, o.Name)
			}
			if !slices.Equal(applied, tc.applied) {
				t.Errorf("applied %v, want %v", applied, tc.applied)
			}
			if len(ev.Conflicts) != len(tc.conflicts) {
				t.Errorf("conflicts %+v, want %v", ev.Conflicts, tc.conflicts)
			}
			for name, with := range tc.conflicts {
				c, ok := ev.Conflicts[name]
				if !ok || c.With != with {
					t.Errorf("conflict of %s: %+v, want one with %s", name, c, with)
				}
				if ok && c.Message() == "" {
					t.Errorf("conflict of %s has no message", name)
				}
			}
		})
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	spot := []v1alpha1.NodeSelectorRequirement{req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")}
	c5 := []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "c5")}
	its := types()
	original := []float64{its[0].Offerings[0].Price, its[0].Offerings[1].Price, its[1].Offerings[0].Price}
	overlays := []Overlay{
		mustParse(t, "discount-c5", 10, c5, func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("-50%") }),
		mustParse(t, "spot-flat", 1, spot, func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("0.1") }),
		mustParse(t, "fpga", 1, c5, func(s *v1alpha1.NodeOverlaySpec) {
			s.Capacity = corev1.ResourceList{"example.com/fpga": resource.MustParse("2")}
		}),
		mustParse(t, "fpga-more", 3, c5, func(s *v1alpha1.NodeOverlaySpec) {
			s.Capacity = corev1.ResourceList{"example.com/fpga": resource.MustParse("4"), "example.com/dongle": resource.MustParse("1")}
		}),
	}
	res := Apply(pool("default", nil), its, overlays)

	c5Got, m5Got := res.InstanceTypes[0], res.InstanceTypes[1]
	if c5Got.Name != "c5.xlarge" || m5Got.Name != "m5.xlarge" {
		t.Fatalf("order changed: %s, %s", c5Got.Name, m5Got.Name)
	}
	// c5: the weight-10 discount wins over the flat spot price everywhere.
	for i, want := range []float64{0.25, 0.5, 0.5} {
		if got := c5Got.Offerings[i].Price; got != want {
			t.Errorf("c5 offering %d price %v, want %v", i, got, want)
		}
	}
	// m5: only its spot offering gets the flat price.
	for i, want := range []float64{0.1, 2, 2} {
		if got := m5Got.Offerings[i].Price; got != want {
			t.Errorf("m5 offering %d price %v, want %v", i, got, want)
		}
	}
	// The weight-3 overlay sets both resources; the weight-1 one is shadowed.
	if got := c5Got.Capacity.Name("example.com/fpga", resource.DecimalSI).Value(); got != 4 {
		t.Errorf("c5 fpga capacity %d, want 4", got)
	}
	if got := c5Got.Allocatable()["example.com/dongle"]; got.Value() != 1 {
		t.Errorf("c5 allocatable dongle %s, want 1", got.String())
	}
	if got := c5Got.Capacity.Cpu().String(); got != "4" {
		t.Errorf("c5 cpu %s, want the type's 4", got)
	}
	if _, ok := m5Got.Capacity["example.com/fpga"]; ok {
		t.Error("m5 got the c5 overlay's fpga")
	}
	if !res.PriceOverlaid["c5.xlarge"] || !res.PriceOverlaid["m5.xlarge"] || !res.CapacityOverlaid["c5.xlarge"] || res.CapacityOverlaid["m5.xlarge"] {
		t.Errorf("overlaid flags price %v capacity %v", res.PriceOverlaid, res.CapacityOverlaid)
	}
	// The input types are untouched.
	if its[0].Offerings[0].Price != original[0] || its[0].Offerings[1].Price != original[1] || its[1].Offerings[0].Price != original[2] {
		t.Error("Apply changed the prices of its input")
	}
	if _, ok := its[0].Capacity["example.com/fpga"]; ok {
		t.Error("Apply changed the capacity of its input")
	}
	if c5Got == its[0] || m5Got == its[1] {
		t.Error("changed types are not copies")
	}

	// A type no overlay changes is returned as it is.
	untouched := Apply(pool("default", nil), its, []Overlay{overlays[0]})
	if untouched.InstanceTypes[1] != its[1] {
		t.Error("m5, which the c5 discount does not match, was copied")
	}
	if !untouched.Changed() || (Result{}).Changed() {
		t.Error("Changed() is wrong")
	}
}

func TestInstanceTypesFromContext(t *testing.T) {
	t.Parallel()
	its := types()
	if got := InstanceTypes(context.Background(), its); !slices.Equal(got, its) {
		t.Error("without a launch's overlays the types must pass through")
	}
	o := mustParse(t, "flat", 0, nil, func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("0.01") })
	ctx := withApplier(context.Background(), func(in []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
		return Apply(pool("default", nil), in, []Overlay{o}).InstanceTypes
	})
	for _, it := range InstanceTypes(ctx, its) {
		for _, off := range it.Offerings {
			if off.Price != 0.01 {
				t.Errorf("%s %s/%s price %v, want the overlay's 0.01", it.Name, off.Zone, off.CapacityType, off.Price)
			}
		}
	}
}
