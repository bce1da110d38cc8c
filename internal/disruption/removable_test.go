package disruption_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// TestRemovable: with ReportRemovable, Decide names the nodes multi-node
// consolidation takes with no budget in the way (here two of four large
// nodes at a quarter of their cpu, not the full one), whether or not a
// budget holds them back now. Without the option, or when consolidation is
// skipped, nothing is reported.
func TestRemovable(t *testing.T) {
	small, large := instanceType("small", 2, 0.10), instanceType("large", 8, 0.40)
	nodes := func(pool *v1.NodePool) []*machine.Machine {
		out := []*machine.Machine{makeNode("full", pool, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("f1", "web", "4"), pod("f2", "web", "3500m")).obj()}
		for _, name := range []string{"a", "b", "c", "d"} {
			out = append(out, makeNode(name, pool, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p-"+name, "web", "2")).obj())
		}
		return out
	}
	input := func(nodesBudget string) disruption.Input {
		pool := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).budgets(budget(nodesBudget)).obj()
		return disruption.Input{Now: now, Nodes: nodes(pool), NodePools: []simulator.NodePool{{NodePool: pool, InstanceTypes: []*cloudprovider.InstanceType{small, large}}}}
	}
	opts := disruption.Options{ReportRemovable: true}

	unblocked := disruption.Decide(input("100%"), opts)
	if unblocked.Command == nil || unblocked.Command.Method != disruption.MethodMultiNode {
		t.Fatalf("with a 100%% budget: command %+v, want multi-node consolidation", summarize(unblocked.Command))
	}
	var taken []string
	for _, c := range unblocked.Command.Candidates {
		taken = append(taken, c.Name())
	}
	slices.Sort(taken)
	if len(taken) < 2 || slices.Contains(taken, "full") {
		t.Fatalf("multi-node took %v; the check needs under-used nodes only", taken)
	}
	for name, in := range map[string]disruption.Input{"budget 100%": input("100%"), "budget 0": input("0")} {
		out := disruption.Decide(in, opts)
		got := slices.Sorted(slices.Values(out.Removable))
		if !out.RemovableKnown || !cmp.Equal(got, taken) {
			t.Errorf("%s: Removable = %v (known %v), want %v", name, got, out.RemovableKnown, taken)
		}
	}
	if out := disruption.Decide(input("0"), disruption.Options{}); out.RemovableKnown || len(out.Removable) > 0 {
		t.Errorf("without ReportRemovable: Removable = %v (known %v), want none", out.Removable, out.RemovableKnown)
	}
	skipped := input("0")
	skipped.SkipConsolidation = true
	if out := disruption.Decide(skipped, opts); out.RemovableKnown {
		t.Errorf("with consolidation skipped: Removable known (%v), want unknown", out.Removable)
	}
}
