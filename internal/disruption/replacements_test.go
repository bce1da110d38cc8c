package disruption_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// TestMultiNodeReplacements: eight 2-cpu nodes ($0.10/h each) run a
// 1.5-cpu pod each; an 8-cpu node costs $0.25/h. Karpenter's one
// replacement per move takes the five nodes one 8-cpu node can hold; with
// MultiNodeReplacements one move replaces all eight with two 8-cpu nodes,
// and each replacement's launch options are narrowed so that whichever
// is launched, the two cost less than the eight.
func TestMultiNodeReplacements(t *testing.T) {
	pool := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	small, xlarge := instanceType("small", 2, 0.10), instanceType("xlarge", 8, 0.25)
	var nodes []*machine.Machine
	var all []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		nodes = append(nodes, makeNode(name, pool, small, zoneA, v1.CapacityTypeOnDemand).pods(pod("p-"+name, "web", "1500m")).obj())
		all = append(all, name)
	}
	in := disruption.Input{Now: now, Nodes: nodes, NodePools: []simulator.NodePool{{NodePool: pool, InstanceTypes: []*cloudprovider.InstanceType{small, xlarge}}}}

	for name, tc := range map[string]struct {
		multi bool
		want  *summary
		after float64
	}{
		"one replacement, as Karpenter": {
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: all[:5], Replacements: []string{"xlarge/[on-demand]"}},
			after: 0.25,
		},
		"several with the gate": {
			multi: true,
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: all, Replacements: []string{"xlarge/[on-demand]", "xlarge/[on-demand]"}},
			after: 0.50,
		},
	} {
		t.Run(name, func(t *testing.T) {
			out := disruption.Decide(in, disruption.Options{MultiNodeReplacements: tc.multi})
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Fatalf("command (-want +got):\n%s\nblocked: %+v", diff, messages(out.Blocked))
			}
			cmd := out.Command
			if d := cmd.PriceAfter - tc.after; d > 1e-9 || d < -1e-9 {
				t.Errorf("PriceAfter = %.3f, want %.3f", cmd.PriceAfter, tc.after)
			}
			// The dearest option of each replacement, together, still
			// costs less than the candidates.
			worst := 0.0
			for _, r := range cmd.Replacements {
				dearest := 0.0
				for _, it := range r.Claim.InstanceTypes {
					for _, o := range it.Offerings {
						if o.CapacityType == v1.CapacityTypeOnDemand && o.Available {
							dearest = max(dearest, o.Price)
						}
					}
				}
				worst += dearest
			}
			if worst >= cmd.PriceBefore {
				t.Errorf("replacements' dearest options cost %.3f together, not below the candidates' %.3f", worst, cmd.PriceBefore)
			}
		})
	}
}

// TestMultiNodeReplacementsConverge: on the convergence benchmark's
// 100-node cluster scaled down to a third, consolidation with the gate
// ends within 5% of a fresh plan's price for the remaining pods, and below
// where Karpenter's one-replacement moves stop (13% above, today).
func TestMultiNodeReplacementsConverge(t *testing.T) {
	in := scaledDown(benchInput(100), 3)
	fresh, _, _ := freshPlan(t, in)
	ratio := map[bool]float64{}
	for _, multi := range []bool{false, true} {
		r := convergeCounting(t, in, disruption.Options{Clock: clock.RealClock{}, MultiNodeReplacements: multi})
		ratio[multi] = r.cost / fresh
		t.Logf("MultiNodeReplacements=%v: converged at $%.3f/h, %.3fx the fresh plan's $%.3f/h, in %d commands, %d evictions (fewest %d)",
			multi, r.cost, ratio[multi], fresh, r.commands, r.evictions, r.fewest)
	}
	if ratio[true] > 1.05 || ratio[true] >= ratio[false] {
		t.Errorf("with the gate the cluster converged at %.3fx the fresh plan (without: %.3fx); want at most 1.05x and below", ratio[true], ratio[false])
	}
}
