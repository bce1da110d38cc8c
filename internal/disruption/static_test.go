package disruption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// staticPool is makePool's pool with replicas set.
func staticPool(name string, replicas int64) *poolWrapper {
	w := makePool(name)
	w.np.Spec.Replicas = ptr.To(replicas)
	return w
}

// TestStaticNodePools: a static pool's nodes are never emptiness or
// consolidation candidates, and no consolidation or drift of another pool
// launches from it; its drifted nodes are replaced one for one from the
// pool, within the Drifted budget, not while it scales down, and not past
// limits.nodes.
func TestStaticNodePools(t *testing.T) {
	static := staticPool("static", 2).obj()
	dynamic := makePool("dynamic").obj()
	atLimit := staticPool("static", 2).obj()
	atLimit.Spec.Limits = v1.Limits{disruption.LimitNodes: resource.MustParse("2")}
	noDriftBudget := staticPool("static", 2).budgets(budget("0", v1.DisruptionReasonDrifted)).obj()

	node := func(name string, np *v1.NodePool, it string) *nodeWrapper {
		for _, t := range catalog() {
			if t.Name == it {
				return makeNode(name, np, t, zoneA, v1.CapacityTypeOnDemand)
			}
		}
		panic("no type " + it)
	}
	cases := map[string]struct {
		pools   []*v1.NodePool
		nodes   []*machine.Machine
		want    *summary
		blocked string
		held    bool
	}{
		"an empty static node is not deleted": {
			pools: []*v1.NodePool{static},
			nodes: []*machine.Machine{node("a", static, "large").obj(), node("b", static, "large").obj()},
		},
		"an under-used static node is not consolidated": {
			pools: []*v1.NodePool{static},
			nodes: []*machine.Machine{
				node("a", static, "large").pods(pod("p1", "web", "100m")).obj(),
				node("b", static, "large").pods(pod("p2", "web", "100m")).obj(),
			},
		},
		"a dynamic node's pods move onto a static node but never onto a new static claim": {
			pools: []*v1.NodePool{static, dynamic},
			nodes: []*machine.Machine{
				node("s", static, "small").pods(pod("p1", "web", "100m")).obj(),
				node("d", dynamic, "large").pods(pod("p2", "web", "1")).obj(),
			},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete, Candidates: []string{"d"}},
		},
		"a drifted static node is replaced one for one from its pool": {
			pools: []*v1.NodePool{static, dynamic},
			nodes: []*machine.Machine{
				node("a", static, "large").pods(pod("p1", "web", "1")).drifted(time.Minute).obj(),
				node("b", static, "large").drifted(2 * time.Minute).obj(),
			},
			want: &summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionReplace,
				Candidates: []string{"b"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"static drift goes before dynamic drift": {
			pools: []*v1.NodePool{static, dynamic},
			nodes: []*machine.Machine{
				node("d", dynamic, "large").pods(pod("p1", "web", "1")).lastPodEvent(time.Second).drifted(time.Hour).obj(),
				node("s", static, "small").drifted(time.Minute).obj(),
			},
			want: &summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionReplace,
				Candidates: []string{"s"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"the Drifted budget holds a static node": {
			pools: []*v1.NodePool{noDriftBudget},
			nodes: []*machine.Machine{node("a", noDriftBudget, "large").drifted(time.Minute).obj()},
			held:  true,
		},
		"no replacement past limits.nodes": {
			pools: []*v1.NodePool{atLimit},
			nodes: []*machine.Machine{
				node("a", atLimit, "large").drifted(time.Minute).obj(),
				node("b", atLimit, "large").obj(),
			},
			blocked: "is at its node limit (2 nodes, limits.nodes 2)",
		},
		"no drift replacement while the pool scales down": {
			pools: []*v1.NodePool{static},
			nodes: []*machine.Machine{
				node("a", static, "large").drifted(time.Minute).obj(),
				node("b", static, "large").obj(), node("c", static, "large").obj(),
			},
			blocked: "is scaling down (3 nodes, 2 replicas)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := disruption.Decide(input(tc.pools, tc.nodes...), disruption.Options{})
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Errorf("command (-want +got):\n%s\nblocked: %+v", diff, messages(out.Blocked))
			}
			if tc.blocked != "" && !strings.Contains(strings.Join(messages(out.Blocked), "\n"), tc.blocked) {
				t.Errorf("no blocked message containing %q in %q", tc.blocked, messages(out.Blocked))
			}
			if tc.held && len(out.Held) == 0 {
				t.Errorf("no candidate held by a budget; blocked: %q", messages(out.Blocked))
			}
		})
	}
}

// TestStaticNodesAreNeverConsolidatable: the Consolidatable condition is
// never due on a static pool's claim, whatever consolidateAfter says.
func TestStaticNodesAreNeverConsolidatable(t *testing.T) {
	static := staticPool("static", 1).obj()
	nc := makeNode("a", static, catalog()[0], zoneA, v1.CapacityTypeOnDemand).obj().NodeClaim
	if _, ok := disruption.ConsolidatableAt(nc, static); ok {
		t.Error("a static pool's claim has a time it becomes consolidatable")
	}
	if disruption.IsConsolidatable(nc, static, now.Add(24*time.Hour)) {
		t.Error("a static pool's claim is consolidatable")
	}
	if !disruption.IsConsolidatable(nc, makePool("dynamic").obj(), now) {
		t.Error("the same claim of a dynamic pool is not consolidatable")
	}
}
