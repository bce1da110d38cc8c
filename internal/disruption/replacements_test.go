package disruption_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// TestMultiNodeReplacements: eight 2-cpu nodes ($0.10/h each) run a
// 1.5-cpu pod each; an 8-cpu node costs $0.15/h or $0.25/h. Karpenter's
// one replacement per move takes the five nodes one 8-cpu node can hold;
// with MultiNodeReplacements one move replaces all eight with two 8-cpu
// nodes, and each replacement's launch options are narrowed so that
// whichever is launched, the two cost less than the eight. Such a re-pack
// is held to the Balanced score at k = 2: at $0.15 it saves 62.5% of the
// pool's cost for all of its disruption (0.625, taken); at $0.25, 37.5%
// (0.375, refused), and the gate makes Karpenter's move instead.
func TestMultiNodeReplacements(t *testing.T) {
	pool := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	small := instanceType("small", 2, 0.10)
	var nodes []*machine.Machine
	var all []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		nodes = append(nodes, makeNode(name, pool, small, zoneA, v1.CapacityTypeOnDemand).pods(pod("p-"+name, "web", "1500m")).obj())
		all = append(all, name)
	}
	oneOfFive := &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
		Candidates: all[:5], Replacements: []string{"xlarge/[on-demand]"}}

	for name, tc := range map[string]struct {
		multi       bool
		xlargePrice float64
		want        *summary
		after       float64
	}{
		"one replacement, as Karpenter": {xlargePrice: 0.25, want: oneOfFive, after: 0.25},
		"several with the gate": {
			multi: true, xlargePrice: 0.15,
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: all, Replacements: []string{"xlarge/[on-demand]", "xlarge/[on-demand]"}},
			after: 0.30,
		},
		"one replacement with the gate when the re-pack scores below 1/2": {multi: true, xlargePrice: 0.25, want: oneOfFive, after: 0.25},
	} {
		in := disruption.Input{Now: now, Nodes: nodes, NodePools: []simulator.NodePool{{NodePool: pool,
			InstanceTypes: []*cloudprovider.InstanceType{small, instanceType("xlarge", 8, tc.xlargePrice)}}}}
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

// TestMultiNodeReplacementsRules: with the gate, a re-pack of spot nodes
// into spot nodes follows multi-node's spot rule (no minimum of 15 cheaper
// types, which is single-node's), and a prefix whose re-pack would need as
// many nodes as it removes still gets the one-replacement move.
func TestMultiNodeReplacementsRules(t *testing.T) {
	spotPool := makePool("default").obj()
	odPool := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	// At $0.15 an 8-cpu node makes the 8-into-2 re-pack save 62.5% of
	// the pool's cost, enough for the score it is held to.
	small, xlarge := instanceType("small", 2, 0.10), instanceType("xlarge", 8, 0.15)
	tiny, mid, large := instanceType("tiny", 2, 0.05), instanceType("mid", 4, 0.40), instanceType("large", 8, 0.30)
	nodes := func(pool *v1.NodePool, it *cloudprovider.InstanceType, capacityType string, names ...string) []*machine.Machine {
		var out []*machine.Machine
		for _, name := range names {
			out = append(out, makeNode(name, pool, it, zoneA, capacityType).pods(pod("p-"+name, "web", "1500m")).obj())
		}
		return out
	}
	for name, tc := range map[string]struct {
		pool  *v1.NodePool
		types []*cloudprovider.InstanceType
		nodes []*machine.Machine
		opts  disruption.Options
		want  *summary
	}{
		"spot re-pack with two cheaper spot types": {
			pool: spotPool, types: []*cloudprovider.InstanceType{small, xlarge},
			nodes: nodes(spotPool, small, v1.CapacityTypeSpot, "a", "b", "c", "d", "e", "f", "g", "h"),
			opts:  disruption.Options{MultiNodeReplacements: true, SpotToSpotConsolidation: true},
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a", "b", "c", "d", "e", "f", "g", "h"}, Replacements: []string{"xlarge/[spot]", "xlarge/[spot]"}},
		},
		"one replacement when the re-pack needs a node per candidate": {
			// Alone, the three pods would go on three $0.05 nodes: as many
			// as the candidates, so no re-pack; one $0.30 node still saves.
			pool: odPool, types: []*cloudprovider.InstanceType{tiny, mid, large},
			nodes: nodes(odPool, mid, v1.CapacityTypeOnDemand, "a", "b", "c"),
			opts:  disruption.Options{MultiNodeReplacements: true},
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a", "b", "c"}, Replacements: []string{"large/[on-demand]"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := disruption.Input{Now: now, Nodes: tc.nodes, NodePools: []simulator.NodePool{{NodePool: tc.pool, InstanceTypes: tc.types}}}
			out := disruption.Decide(in, tc.opts)
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Errorf("command (-want +got):\n%s\nblocked: %+v", diff, messages(out.Blocked))
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

// TestDecideDoesNotWriteItsInput: the controller hands Decide the cluster
// model's objects, which share memory with the informer cache; a decision
// (every method, with and without MultiNodeReplacements) must leave every
// Node, NodeClaim and pod as it found them.
func TestDecideDoesNotWriteItsInput(t *testing.T) {
	in := scaledDown(benchInput(100), 3)
	type copies struct {
		node  *corev1.Node
		claim *v1.NodeClaim
		pods  []*corev1.Pod
	}
	before := make([]copies, len(in.Nodes))
	for i, n := range in.Nodes {
		before[i] = copies{node: n.Node.DeepCopy(), claim: n.NodeClaim.DeepCopy()}
		for _, p := range n.Pods {
			before[i].pods = append(before[i].pods, p.DeepCopy())
		}
	}
	for _, multi := range []bool{false, true} {
		if out := disruption.Decide(in, disruption.Options{MultiNodeReplacements: multi}); out.Command == nil {
			t.Fatalf("MultiNodeReplacements=%v: no command; the check needs a decision that simulates moves", multi)
		}
	}
	for i, n := range in.Nodes {
		if !reflect.DeepEqual(before[i].node, n.Node) || !reflect.DeepEqual(before[i].claim, n.NodeClaim) {
			t.Errorf("node %s: Decide changed its Node or NodeClaim", n.Name())
		}
		for j, p := range n.Pods {
			if !reflect.DeepEqual(before[i].pods[j], p) {
				t.Errorf("node %s: Decide changed pod %s", n.Name(), p.Name)
			}
		}
	}
}

// TestRepackKeepsOffTheNextCandidates: with MultiNodeReplacements and the
// default 10% budget each re-pack may remove only a tenth of the pool. A
// re-pack that put pods on nodes a later command removes moved them twice
// and kept the fixed point 1.177x the fresh plan, with 1.271 evictions per
// pod that had to move; keeping a re-pack off the next candidates when it
// can, the 100-node cluster converges within 6% of the fresh plan with at
// most 1.2 evictions per such pod (1.051x and 1.190: deterministic).
func TestRepackKeepsOffTheNextCandidates(t *testing.T) {
	expectGateConverges(t, 100, "10%", 1.06, 1.2)
}

// expectGateConverges runs the convergence benchmark's cluster of the
// given size, scaled down to a third, to its fixed point with
// MultiNodeReplacements under one budget, and fails unless it ends within
// maxCost times the fresh plan's price with at most maxEvictions evictions
// per pod that had to move.
func expectGateConverges(t *testing.T, nodes int, nodesBudget string, maxCost, maxEvictions float64) {
	t.Helper()
	in := scaledDown(benchInput(nodes), 3)
	in.NodePools[0].NodePool.Spec.Disruption.Budgets = []v1.Budget{budget(nodesBudget)}
	r := convergeCounting(t, in, disruption.Options{Clock: clock.RealClock{}, MultiNodeReplacements: true})
	fresh, _, _ := freshPlan(t, in)
	cost, evictions := r.cost/fresh, float64(r.evictions)/float64(r.fewest)
	t.Logf("converged at %.3fx the fresh plan in %d commands, %d evictions (fewest %d): %.3f", cost, r.commands, r.evictions, r.fewest, evictions)
	if cost > maxCost || evictions > maxEvictions {
		t.Errorf("converged at %.3fx the fresh plan with %.3f evictions per pod that had to move; want at most %.2fx and %.1f", cost, evictions, maxCost, maxEvictions)
	}
}

// TestValidateRepacksAgainstTheSameNodes: a re-pack with the gate keeps off
// the next candidates of its pass. If those nodes stop being candidates
// before validation (here: pods are nominated to them), validation still
// simulates the re-pack without them, and reaches the same decision, rather
// than moving the pods onto them and calling the decision changed.
func TestValidateRepacksAgainstTheSameNodes(t *testing.T) {
	in := scaledDown(benchInput(100), 3)
	in.NodePools[0].NodePool.Spec.Disruption.Budgets = []v1.Budget{budget("10%")}
	opts := disruption.Options{Clock: clock.RealClock{}, MultiNodeReplacements: true}
	in, cmd := firstKeepOffRepack(t, in, opts)
	avoided := map[string]bool{}
	for _, name := range cmd.AvoidedNodes {
		avoided[name] = true
	}
	later := in
	later.Nodes = nil
	for _, n := range in.Nodes {
		if avoided[n.Name()] {
			cp := *n
			cp.NominatedUntil = in.Now.Add(time.Hour)
			n = &cp
		}
		later.Nodes = append(later.Nodes, n)
	}
	got, err := disruption.Validate(cmd, later, opts)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got.Decision() != cmd.Decision() || len(got.Replacements) != len(cmd.Replacements) {
		t.Errorf("validated %s with %d replacements, decided %s with %d", got.Decision(), len(got.Replacements), cmd.Decision(), len(cmd.Replacements))
	}
	for _, p := range got.Plan.Placements {
		if avoided[p.Node] {
			t.Errorf("validation moves pod %s onto %s, which the decision kept off", p.Pod.Name, p.Node)
		}
	}
}

// TestValidateScoresTheRepackAgain: a re-pack kept off other nodes is
// validated against the same nodes, and held to its score again there. If
// the pool has grown meanwhile (here: twenty $10/h nodes nothing can use),
// the same savings are a small share of its cost, and the re-pack is not
// started as decided.
func TestValidateScoresTheRepackAgain(t *testing.T) {
	in := scaledDown(benchInput(100), 3)
	in.NodePools[0].NodePool.Spec.Disruption.Budgets = []v1.Budget{budget("10%")}
	opts := disruption.Options{Clock: clock.RealClock{}, MultiNodeReplacements: true}
	in, cmd := firstKeepOffRepack(t, in, opts)
	if len(cmd.Replacements) < 2 {
		t.Fatalf("the first re-pack kept off other nodes launches %d nodes; the check needs several", len(cmd.Replacements))
	}
	if _, err := disruption.Validate(cmd, in, opts); err != nil {
		t.Fatalf("Validate on the view it was decided on: %v", err)
	}
	pool := in.NodePools[0].NodePool
	pricey := instanceType("pricey", 2, 10)
	later := in
	later.Nodes = slices.Clone(in.Nodes)
	later.NodePools = slices.Clone(in.NodePools)
	later.NodePools[0].InstanceTypes = append(slices.Clone(in.NodePools[0].InstanceTypes), pricey)
	for i := range 20 {
		n := makeNode(fmt.Sprintf("pricey-%02d", i), pool, pricey, zoneA, v1.CapacityTypeOnDemand).obj()
		n.Node.Spec.Taints = []corev1.Taint{{Key: "example.com/reserved", Effect: corev1.TaintEffectNoSchedule}}
		later.Nodes = append(later.Nodes, n)
	}
	got, err := disruption.Validate(cmd, later, opts)
	switch {
	case err != nil && !disruption.IsValidationError(err):
		t.Errorf("Validate: %v, want a validation error or a one-replacement move", err)
	case err == nil && len(got.Replacements) >= 2:
		t.Errorf("validated the re-pack into %d nodes in a pool twenty $10/h nodes larger; want it refused or turned into a one-replacement move", len(got.Replacements))
	}
}

// TestRepackKeepsOffNodesPendingPodsWaitFor: a pending pod whose room is on
// a node a re-pack keeps off keeps that room (the node stays and the
// re-pack puts nothing on it), so the re-pack is not refused for taking it.
func TestRepackKeepsOffNodesPendingPodsWaitFor(t *testing.T) {
	in := scaledDown(benchInput(100), 3)
	in.NodePools[0].NodePool.Spec.Disruption.Budgets = []v1.Budget{budget("10%")}
	opts := disruption.Options{Clock: clock.RealClock{}, MultiNodeReplacements: true}
	in, cmd := firstKeepOffRepack(t, in, opts)
	kept := cmd.AvoidedNodes[0]
	in.PendingPods = []*corev1.Pod{pendingOn("waiting", kept)}
	got := disruption.Decide(in, opts)
	if got.Command == nil || !slices.Contains(got.Command.AvoidedNodes, kept) {
		t.Errorf("with a pod pending for %s: command %+v, blocked %v; want the re-pack that keeps off %s", kept, summarize(got.Command), messages(got.Blocked), kept)
	}
}

// pendingOn is a small pod the kube-scheduler marked unschedulable that
// fits only on the node named.
func pendingOn(name, node string) *corev1.Pod {
	p := dtesting.MakePod(name).Req("cpu", "10m").NodeSelector(corev1.LabelHostname, node).Obj()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	return p
}

// firstKeepOffRepack applies the decisions taken on in until one is a
// re-pack that keeps off other nodes, and returns the input it was taken
// on with that command; it fails the test if none comes within 100 passes.
func firstKeepOffRepack(t *testing.T, in disruption.Input, opts disruption.Options) (disruption.Input, *disruption.Command) {
	t.Helper()
	for pass := 0; pass < 100; pass++ {
		cmd := disruption.Decide(in, opts).Command
		if cmd == nil {
			break
		}
		if len(cmd.AvoidedNodes) > 0 {
			return in, cmd
		}
		in = apply(in, cmd, pass)
	}
	t.Fatal("no re-pack kept off other nodes: the check needs one")
	return in, nil
}

// TestRepackWeighsItsSavingsAgainstItsEvictions: on the convergence
// benchmark's 500-node cluster scaled down to a third, with nothing
// throttling, five re-packs of 100 nodes each leave 100 nodes, and a sixth
// re-packed all of them (every one of the 1,482 pods, most moved once
// already) into 38 to save 16% more: 1.9 evictions per pod that had to
// move. Held to the Balanced score at k = 2 (0.16 < 0.5), that re-pack is
// not made; the cluster still converges within 5% of the fresh plan, with
// at most 1.3 evictions per such pod (0.999x and 1.206: deterministic).
func TestRepackWeighsItsSavingsAgainstItsEvictions(t *testing.T) {
	expectGateConverges(t, 500, "100%", 1.05, 1.3)
}
