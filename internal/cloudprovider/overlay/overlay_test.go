package overlay

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
)

func nodeOverlay(name string, mutate func(*v1alpha1.NodeOverlaySpec)) *v1alpha1.NodeOverlay {
	no := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{
		Requirements: []v1alpha1.NodeSelectorRequirement{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}},
	}}
	if mutate != nil {
		mutate(&no.Spec)
	}
	return no
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		spec    func(*v1alpha1.NodeOverlaySpec)
		wantErr []string // substrings, each naming a field
		check   func(t *testing.T, o Overlay)
	}{
		{name: "requirements only", check: func(t *testing.T, o Overlay) {
			if o.Price != nil || o.Capacity != nil || o.Weight != 0 || o.Requirements.Len() != 1 {
				t.Errorf("parsed %+v, want one requirement and nothing else", o)
			}
		}},
		{name: "price", spec: func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("0.25") }, check: func(t *testing.T, o Overlay) {
			if o.Price == nil || o.Price.Kind != PriceSet || o.Price.Value != 0.25 {
				t.Errorf("price %+v, want set 0.25", o.Price)
			}
		}},
		{name: "absolute adjustment", spec: func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("-0.5") }, check: func(t *testing.T, o Overlay) {
			if o.Price == nil || o.Price.Kind != PriceAdd || o.Price.Value != -0.5 {
				t.Errorf("price %+v, want add -0.5", o.Price)
			}
		}},
		{name: "percent adjustment", spec: func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("+10%") }, check: func(t *testing.T, o Overlay) {
			if o.Price == nil || o.Price.Kind != PricePercent || o.Price.Value != 10 {
				t.Errorf("price %+v, want percent +10", o.Price)
			}
		}},
		{name: "weight and capacity", spec: func(s *v1alpha1.NodeOverlaySpec) {
			s.Weight = ptr.To[int32](10)
			s.Capacity = corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}
		}, check: func(t *testing.T, o Overlay) {
			if o.Weight != 10 || o.Capacity.Name("example.com/fpga", resource.DecimalSI).Value() != 1 {
				t.Errorf("parsed %+v, want weight 10 and one fpga", o)
			}
		}},
		{name: "price and adjustment", spec: func(s *v1alpha1.NodeOverlaySpec) { s.Price, s.PriceAdjustment = ptr.To("1"), ptr.To("-1") },
			wantErr: []string{"spec.price and spec.priceAdjustment"}},
		{name: "unsigned adjustment", spec: func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("10%") },
			wantErr: []string{"spec.priceAdjustment"}},
		{name: "garbage adjustment", spec: func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("-ten") },
			wantErr: []string{"spec.priceAdjustment"}},
		{name: "adjustment below -100%", spec: func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("-150%") },
			wantErr: []string{"spec.priceAdjustment", "more than 100%"}},
		{name: "signed price", spec: func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("-1") },
			wantErr: []string{"spec.price:"}},
		{name: "cpu capacity", spec: func(s *v1alpha1.NodeOverlaySpec) {
			s.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("1")}
		}, wantErr: []string{"spec.capacity[cpu]", "spec.capacity[pods]"}},
		{name: "weight out of range", spec: func(s *v1alpha1.NodeOverlaySpec) { s.Weight = ptr.To[int32](10001) },
			wantErr: []string{"spec.weight"}},
		{name: "bad requirement", spec: func(s *v1alpha1.NodeOverlaySpec) {
			s.Requirements = append(s.Requirements, v1alpha1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"four"}})
		}, wantErr: []string{"spec.requirements[1]"}},
		{name: "bad requirement key", spec: func(s *v1alpha1.NodeOverlaySpec) {
			s.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: "not a key", Operator: corev1.NodeSelectorOpExists}}
		}, wantErr: []string{"spec.requirements[0].key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := Parse(nodeOverlay("o", tc.spec))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Parse succeeded, want an error naming %v", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, o)
		})
	}
}

func TestPriceChangeApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		price bool
		in    float64
		want  float64
	}{
		{"0.25", true, 1, 0.25},
		{"-0.5", false, 1, 0.5},
		{"+1.2", false, 1, 2.2},
		{"-2", false, 1, 0}, // never below zero
		{"-10%", false, 2, 1.8},
		{"+50%", false, 2, 3},
		{"-100%", false, 2, 0},
		{"-.5", false, 1, 0.5},
	} {
		spec := func(s *v1alpha1.NodeOverlaySpec) {
			if tc.price {
				s.Price = ptr.To(tc.field)
			} else {
				s.PriceAdjustment = ptr.To(tc.field)
			}
		}
		o, err := Parse(nodeOverlay("o", spec))
		if err != nil {
			t.Errorf("%s: %v", tc.field, err)
			continue
		}
		if got := o.Price.Apply(tc.in); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s applied to %v = %v, want %v", tc.field, tc.in, got, tc.want)
		}
	}
}

func TestSort(t *testing.T) {
	t.Parallel()
	overlays := []Overlay{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 5}, {Name: "d"}}
	Sort(overlays)
	var got []string
	for _, o := range overlays {
		got = append(got, o.Name)
	}
	if strings.Join(got, ",") != "c,b,a,d" {
		t.Errorf("order %v, want c,b,a,d (weight, then the name that sorts last)", got)
	}
}
