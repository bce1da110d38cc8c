package disrupter

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// TestFingerprintSeesInstanceTypeChanges: consolidation is skipped while
// the fingerprint holds, so a change of what the NodePools' instance types
// offer (a spot price refresh, an offering found unavailable, a
// NodeOverlay's price or extended resource) must change it, and a view
// with the same types must not.
func TestFingerprintSeesInstanceTypeChanges(t *testing.T) {
	view := func(mutate func([]*cloudprovider.InstanceType)) disruption.Input {
		types := []*cloudprovider.InstanceType{
			dtesting.MakeInstanceType("m5.large").CPU("2").Memory("8Gi").Obj(),
			dtesting.MakeInstanceType("c5.large").CPU("2").Memory("4Gi").Obj(),
		}
		if mutate != nil {
			mutate(types)
		}
		pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", ResourceVersion: "7"}}
		return disruption.Input{NodePools: []simulator.NodePool{{NodePool: pool, InstanceTypes: types}}}
	}
	base := fingerprintOf(view(nil))
	if again := fingerprintOf(view(nil)); again != base {
		t.Fatalf("the same view fingerprints %x then %x", base, again)
	}
	for name, mutate := range map[string]func([]*cloudprovider.InstanceType){
		"a price changed":          func(ts []*cloudprovider.InstanceType) { ts[0].Offerings[0].Price *= 0.8 },
		"an offering unavailable":  func(ts []*cloudprovider.InstanceType) { ts[1].Offerings[0].Available = false },
		"a reservation slot taken": func(ts []*cloudprovider.InstanceType) { ts[1].Offerings[0].ReservationCapacity++ },
		"an extended resource":     func(ts []*cloudprovider.InstanceType) { ts[0].Capacity["example.com/fpga"] = resource.MustParse("1") },
		"a type gone and one added": func(ts []*cloudprovider.InstanceType) {
			ts[1] = dtesting.MakeInstanceType("r5.large").CPU("2").Memory("16Gi").Obj()
		},
	} {
		if got := fingerprintOf(view(mutate)); got == base {
			t.Errorf("%s: the fingerprint did not change", name)
		}
	}
}
