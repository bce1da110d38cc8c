package disruption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// TestMethods covers each method on small clusters: what Decide chooses.
func TestMethods(t *testing.T) {
	def := makePool("default").obj()
	onDemand := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	whenEmpty := makePool("default").policy(v1.ConsolidationPolicyWhenEmpty).obj()
	never := makePool("default").consolidateAfter(v1.Never).obj()
	docSpelling := makePool("default").policy(v1.ConsolidationPolicyWhenUnderutilized).obj()
	small, medium, large := catalog()[0], catalog()[1], catalog()[2]
	odNode := func(name string, np *v1.NodePool, it *cloudprovider.InstanceType) *nodeWrapper {
		return makeNode(name, np, it, zoneA, v1.CapacityTypeOnDemand)
	}
	// guard keeps a node out of the candidates while leaving its room usable.
	guard := func(w *nodeWrapper) *machine.Machine {
		return w.annotateNode(v1.DoNotDisruptAnnotationKey, "true").obj()
	}
	cases := map[string]struct {
		pool  *v1.NodePool
		nodes []*machine.Machine
		opts  disruption.Options
		want  *summary
		// blocked, if set, must appear in a Blocked message.
		blocked string
	}{
		"an empty node is deleted": {
			pool:  def,
			nodes: []*machine.Machine{odNode("a", def, large).obj(), odNode("b", def, large).pods(pod("p", "web", "1")).obj()},
			want:  &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"an empty node inside consolidateAfter is kept": {
			pool:  def,
			nodes: []*machine.Machine{odNode("a", def, small).lastPodEvent(10 * time.Second).obj()},
		},
		"consolidateAfter Never keeps an empty node": {
			pool:  never,
			nodes: []*machine.Machine{odNode("a", never, small).obj()},
		},
		"WhenEmpty deletes empty nodes": {
			pool:  whenEmpty,
			nodes: []*machine.Machine{odNode("a", whenEmpty, small).obj()},
			want:  &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"WhenEmpty does not consolidate an under-used node": {
			pool:  whenEmpty,
			nodes: []*machine.Machine{odNode("a", whenEmpty, large).pods(pod("p", "web", "500m")).obj()},
		},
		"a node whose pods fit elsewhere is deleted": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).obj(),
				guard(odNode("b", def, large).pods(pod("p2", "web", "1"))),
			},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"a node is replaced by one cheaper node, spot when the pool allows it": {
			pool:  def,
			nodes: []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "1")).obj()},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[spot]"}},
		},
		"an on-demand pool's node is replaced on-demand": {
			pool:  onDemand,
			nodes: []*machine.Machine{odNode("a", onDemand, large).pods(pod("p1", "web", "1")).obj()},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand]"}},
		},
		"the v1 document's WhenUnderutilized consolidates too": {
			pool:  docSpelling,
			nodes: []*machine.Machine{odNode("a", docSpelling, large).pods(pod("p1", "web", "1")).obj()},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[spot]"}},
		},
		"a replacement must be strictly cheaper": {
			pool:    onDemand,
			nodes:   []*machine.Machine{odNode("a", onDemand, small).pods(pod("p1", "web", "1500m")).obj()},
			blocked: "Can't replace with a cheaper node",
		},
		"several nodes consolidate into one cheaper node": {
			pool: onDemand,
			nodes: []*machine.Machine{
				odNode("a", onDemand, large).pods(pod("p1", "web", "1")).obj(),
				odNode("b", onDemand, large).pods(pod("p2", "web", "1")).obj(),
				odNode("c", onDemand, large).pods(pod("p3", "web", "1")).obj(),
			},
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a", "b", "c"}, Replacements: []string{"medium/[on-demand]"}},
		},
		"several nodes whose pods fit on another are deleted together": {
			pool: onDemand,
			nodes: []*machine.Machine{
				odNode("a", onDemand, medium).pods(pod("p1", "web", "1")).obj(),
				odNode("b", onDemand, medium).pods(pod("p2", "web", "1")).obj(),
				guard(odNode("c", onDemand, large).pods(pod("p3", "web", "1"))),
			},
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete,
				Candidates: []string{"a", "b"}},
		},
		"a multi-node replacement is never the type of a candidate it could keep": {
			pool: onDemand,
			nodes: []*machine.Machine{
				odNode("a", onDemand, large).pods(pod("p1", "web", "1")).obj(),
				odNode("b", onDemand, large).pods(pod("p2", "web", "1")).obj(),
				odNode("c", onDemand, medium).pods(pod("p3", "web", "1")).obj(),
			},
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete,
				Candidates: []string{"a", "b"}},
		},
		"spot is not replaced by spot without the option": {
			pool:    def,
			nodes:   []*machine.Machine{makeNode("a", def, large, zoneA, v1.CapacityTypeSpot).pods(pod("p1", "web", "1")).obj()},
			blocked: "SpotToSpotConsolidation is disabled",
		},
		"spot to spot needs 15 cheaper types": {
			pool:    def,
			opts:    disruption.Options{SpotToSpotConsolidation: true},
			nodes:   []*machine.Machine{makeNode("a", def, large, zoneA, v1.CapacityTypeSpot).pods(pod("p1", "web", "1")).obj()},
			blocked: "requires 15 cheaper instance type options than the current candidate to consolidate, got 2",
		},
		"an empty spot node is deleted without the option": {
			pool:  def,
			nodes: []*machine.Machine{makeNode("a", def, large, zoneA, v1.CapacityTypeSpot).obj()},
			want:  &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"a drifted node is replaced": {
			pool:  def,
			nodes: []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "1")).lastPodEvent(time.Second).drifted(time.Minute).obj()},
			want: &summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"empty drifted nodes are deleted together": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).lastPodEvent(time.Second).drifted(time.Minute).obj(),
				odNode("b", def, large).lastPodEvent(time.Second).drifted(2 * time.Minute).obj(),
				odNode("c", def, large).pods(pod("p1", "web", "1")).lastPodEvent(time.Second).drifted(3 * time.Minute).obj(),
			},
			want: &summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionDelete, Candidates: []string{"b", "a"}},
		},
		"drift does not move pods onto another drifted node": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).lastPodEvent(time.Second).drifted(2 * time.Minute).obj(),
				odNode("b", def, large).pods(pod("p2", "web", "1")).lastPodEvent(time.Second).drifted(time.Minute).obj(),
			},
			want: &summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"a drifted node whose pods fit elsewhere is deleted": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).lastPodEvent(time.Second).drifted(time.Minute).obj(),
				odNode("b", def, large).pods(pod("p2", "web", "1")).lastPodEvent(time.Second).obj(),
			},
			want: &summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"emptiness goes before drift": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).drifted(time.Minute).obj(),
				odNode("b", def, small).obj(),
			},
			want: &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"b"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := disruption.Decide(input([]*v1.NodePool{tc.pool}, tc.nodes...), tc.opts)
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Errorf("command (-want +got):\n%s\nblocked: %+v", diff, messages(out.Blocked))
			}
			if tc.blocked != "" && !strings.Contains(strings.Join(messages(out.Blocked), "\n"), tc.blocked) {
				t.Errorf("no blocked message containing %q in %q", tc.blocked, messages(out.Blocked))
			}
		})
	}
}

func messages(bs []disruption.Blocked) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Node.Name+": "+b.Reason+": "+b.Message)
	}
	return out
}

// TestSpotToSpot: with the option and enough cheaper spot types, a spot
// node is replaced by spot, launching at most 15 types.
func TestSpotToSpot(t *testing.T) {
	np := makePool("default").obj()
	var types []*cloudprovider.InstanceType
	for i := range 20 {
		types = append(types, instanceType("cheap-"+string(rune('a'+i)), 4, 0.05+0.001*float64(i)))
	}
	big := instanceType("big", 16, 1.0)
	types = append(types, big)
	node := makeNode("a", np, big, zoneA, v1.CapacityTypeSpot).pods(pod("p1", "web", "1")).obj()
	in := disruption.Input{Now: now, Nodes: []*machine.Machine{node},
		NodePools: []simulator.NodePool{{NodePool: np, InstanceTypes: types}}}
	out := disruption.Decide(in, disruption.Options{SpotToSpotConsolidation: true})
	if out.Command == nil || out.Command.Decision() != disruption.DecisionReplace {
		t.Fatalf("want a replacement, got %+v (blocked %q)", summarize(out.Command), messages(out.Blocked))
	}
	claim := out.Command.Replacements[0].Claim
	if got := len(claim.InstanceTypes); got != 15 {
		t.Errorf("replacement has %d instance types, want 15", got)
	}
	ct, _ := claim.Requirements.Get(v1.CapacityTypeLabelKey)
	if diff := cmp.Diff([]string{v1.CapacityTypeSpot}, ct.Values()); diff != "" {
		t.Errorf("capacity types (-want +got):\n%s", diff)
	}
	if out.Command.PriceAfter >= out.Command.PriceBefore {
		t.Errorf("replacement $%.3f/h is not cheaper than $%.3f/h", out.Command.PriceAfter, out.Command.PriceBefore)
	}
}

// TestGuards: each guard keeps an otherwise empty node and says why.
func TestGuards(t *testing.T) {
	np := makePool("default").obj()
	base := func() *nodeWrapper { return makeNode("a", np, catalog()[0], zoneA, v1.CapacityTypeOnDemand) }
	protectedPod := func() *corev1.Pod { return pod("p1", "web", "100m") }
	cases := map[string]struct {
		node *machine.Machine
		pdbs []*policyv1.PodDisruptionBudget
		want string
	}{
		"do-not-disrupt pod": {
			node: base().pods(annotate(protectedPod(), v1.DoNotDisruptAnnotationKey, "true")).obj(),
			want: "Pod default/p1 has karpenter.sh/do-not-disrupt annotation",
		},
		"do-not-disrupt pod for a duration still running": {
			node: base().pods(annotate(protectedPod(), v1.DoNotDisruptAnnotationKey, "2h")).obj(),
			want: "Pod default/p1 has karpenter.sh/do-not-disrupt annotation",
		},
		"do-not-disrupt node": {
			node: base().annotateNode(v1.DoNotDisruptAnnotationKey, "true").obj(),
			want: "Node has karpenter.sh/do-not-disrupt annotation",
		},
		"PDB allowing no disruption": {
			node: base().pods(protectedPod()).obj(),
			pdbs: []*policyv1.PodDisruptionBudget{pdb("web", "web", 0)},
			want: "PDB default/web prevents pod evictions (pod default/p1)",
		},
		"two PDBs on one pod": {
			node: base().pods(protectedPod()).obj(),
			pdbs: []*policyv1.PodDisruptionBudget{pdb("web", "web", 1), pdb("web2", "web", 1)},
			want: "Pod default/p1 is covered by 2 PDBs (default/web, default/web2), which blocks its eviction",
		},
		"not initialized": {
			node: base().notInitialized().obj(),
			want: "Node is not initialized",
		},
		"nominated": {
			node: base().nominated(now.Add(5 * time.Second)).obj(),
			want: "Node is nominated for pending pods until 2025-01-06T12:00:05Z",
		},
		"being deleted": {
			node: base().marked().obj(),
			want: "Node is being deleted",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input([]*v1.NodePool{np}, tc.node)
			in.PDBs = tc.pdbs
			in.Nodes[0].NodeClaim.Status.Conditions = append(in.Nodes[0].NodeClaim.Status.Conditions, driftedCondition())
			out := disruption.Decide(in, disruption.Options{})
			if out.Command != nil {
				t.Errorf("guarded node disrupted: %+v", summarize(out.Command))
			}
			if diff := cmp.Diff([]string{"a: DisruptionBlocked: " + tc.want}, messages(out.Blocked)); diff != "" {
				t.Errorf("blocked (-want +got):\n%s", diff)
			}
		})
	}
}

func driftedCondition() metav1.Condition {
	return metav1.Condition{Type: v1.ConditionTypeDrifted, Status: "True", Reason: disruption.DriftReasonNodePool}
}
