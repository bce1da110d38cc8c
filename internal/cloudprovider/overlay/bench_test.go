package overlay

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

// BenchmarkApplyCatalog evaluates and applies a price overlay and a
// capacity overlay to the whole embedded EC2 catalog, as the decorator
// does on every GetInstanceTypes.
func BenchmarkApplyCatalog(b *testing.B) {
	facts, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	its := ec2types.FromCatalog(facts)
	discount, err := Parse(nodeOverlay("discount", func(s *v1alpha1.NodeOverlaySpec) {
		s.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5"}}}
		s.PriceAdjustment = ptr.To("-10%")
	}))
	if err != nil {
		b.Fatal(err)
	}
	fpga, err := Parse(nodeOverlay("fpga", func(s *v1alpha1.NodeOverlaySpec) {
		s.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"f1"}}}
		s.Capacity = corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}
	}))
	if err != nil {
		b.Fatal(err)
	}
	np := pool("default", map[string]string{"team": "a"})
	overlays := []Overlay{discount, fpga}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		applied := Evaluate([]Pool{{NodePool: np, InstanceTypes: its}}, overlays).Applied
		_ = Apply(np, its, applied)
	}
	b.ReportMetric(float64(len(its)), "types")
}
