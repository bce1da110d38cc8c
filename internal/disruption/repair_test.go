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
)

// TestRepair covers the repair method: the node.health controller's
// requests are replaced first, whatever guards and budgets say, with
// replacements when the pods can be placed and without them otherwise.
func TestRepair(t *testing.T) {
	def := makePool("default").obj()
	zeroBudget := makePool("default").budgets(budget("0")).obj()
	onlyLarge := makePool("default").req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "large").obj()
	small, large := catalog()[0], catalog()[2]
	odNode := func(name string, np *v1.NodePool, it *cloudprovider.InstanceType) *nodeWrapper {
		return makeNode(name, np, it, zoneA, v1.CapacityTypeOnDemand)
	}
	const why = "Ready=False since 2025-01-06T11:00:00Z, longer than the 30m0s the cloud provider tolerates"
	cases := map[string]struct {
		pool    *v1.NodePool
		nodes   []*machine.Machine
		pdbs    []*policyv1.PodDisruptionBudget
		repairs []string
		// disrupting names claims a queued command owns.
		disrupting []string
		want       *summary
		// noReplacement, if set, must be in Command.NoReplacement.
		noReplacement string
	}{
		"a node with pods is replaced first": {
			pool:    def,
			nodes:   []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "3")).notReady().obj()},
			repairs: []string{"a"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"medium/[on-demand spot]"}},
		},
		"an empty unhealthy node is deleted": {
			pool:    def,
			nodes:   []*machine.Machine{odNode("a", def, large).notReady().obj(), odNode("b", def, large).pods(pod("p1", "web", "1")).obj()},
			repairs: []string{"a"},
			want:    &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"its pods move to room elsewhere without a replacement": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).notReady().obj(),
				odNode("b", def, large).pods(pod("p2", "web", "1")).obj(),
			},
			repairs: []string{"a"},
			want:    &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"do-not-disrupt on the node and a pod does not stop it": {
			pool: def,
			nodes: []*machine.Machine{odNode("a", def, large).annotateNode(v1.DoNotDisruptAnnotationKey, "true").
				pods(annotate(pod("p1", "web", "1"), v1.DoNotDisruptAnnotationKey, "true")).notReady().obj()},
			repairs: []string{"a"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"a PDB that allows no disruption does not stop it": {
			pool:    def,
			nodes:   []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "1")).notReady().obj()},
			pdbs:    []*policyv1.PodDisruptionBudget{pdb("web", "web", 0)},
			repairs: []string{"a"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"a zero budget does not stop it": {
			pool:    zeroBudget,
			nodes:   []*machine.Machine{odNode("a", zeroBudget, large).pods(pod("p1", "web", "1")).notReady().obj()},
			repairs: []string{"a"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"a nomination does not stop it": {
			pool:    def,
			nodes:   []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "1")).nominated(now.Add(time.Minute)).notReady().obj()},
			repairs: []string{"a"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"pods that fit nowhere: deleted without replacement": {
			pool:          onlyLarge,
			nodes:         []*machine.Machine{odNode("a", onlyLarge, large).pods(pod("p1", "web", "12")).notReady().obj()},
			repairs:       []string{"a"},
			want:          &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
			noReplacement: "pod default/p1 cannot be rescheduled",
		},
		"repair comes before emptiness and drift": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, small).obj(),
				odNode("b", def, large).pods(pod("p1", "web", "1")).drifted(time.Hour).obj(),
				odNode("c", def, large).pods(pod("p2", "web", "1")).notReady().obj(),
			},
			repairs: []string{"c"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionDelete,
				Candidates: []string{"c"}},
		},
		"another unhealthy node is no destination": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).notReady().obj(),
				odNode("b", def, large).notReady().obj(),
			},
			repairs: []string{"a", "b"},
			// b is empty: it goes first.
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionDelete, Candidates: []string{"b"}},
		},
		"pods do not move to another unhealthy node with room": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).notReady().obj(),
				odNode("b", def, large).pods(pod("p2", "web", "1")).notReady().obj(),
			},
			repairs: []string{"a", "b"},
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"small/[on-demand spot]"}},
		},
		"a claim a queued command disrupts is left to it": {
			pool: def,
			nodes: []*machine.Machine{
				odNode("a", def, large).pods(pod("p1", "web", "1")).notReady().obj(),
				odNode("b", def, large).pods(pod("p2", "web", "1")).notReady().obj(),
			},
			repairs:    []string{"a", "b"},
			disrupting: []string{"a"},
			// a's pod moves anyway: the replacement holds both.
			want: &summary{Method: disruption.MethodRepair, Reason: disruption.DisruptionReasonUnhealthy, Decision: disruption.DecisionReplace,
				Candidates: []string{"b"}, Replacements: []string{"medium/[on-demand spot]"}},
		},
		"a node already being deleted is not repaired again": {
			pool:    def,
			nodes:   []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "1")).marked().notReady().obj()},
			repairs: []string{"a"},
		},
		"no request, no repair": {
			pool:  def,
			nodes: []*machine.Machine{odNode("a", def, large).pods(pod("p1", "web", "8")).notReady().obj()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input([]*v1.NodePool{tc.pool}, tc.nodes...)
			in.PDBs = tc.pdbs
			in.Repairs = map[string]string{}
			for _, r := range tc.repairs {
				in.Repairs[r] = why
			}
			in.Disrupting = map[string]bool{}
			for _, d := range tc.disrupting {
				in.Disrupting[d] = true
			}
			out := disruption.Decide(in, disruption.Options{Methods: []disruption.Method{disruption.MethodRepair}})
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Fatalf("command (-want +got):\n%s", diff)
			}
			if out.Command == nil {
				return
			}
			if got := out.Command.NoReplacement; (tc.noReplacement == "") != (got == "") || !strings.Contains(got, tc.noReplacement) {
				t.Errorf("NoReplacement = %q, want %q", got, tc.noReplacement)
			}
			if out.Command.Method.NeedsValidation() || !out.Command.Method.Forced() {
				t.Errorf("repair commands must be forced and not validated")
			}
			if s := out.Command.String(); !strings.HasPrefix(s, "Unhealthy ("+why+"): ") || strings.Contains(s, "saving") {
				t.Errorf("String() = %q", s)
			}
		})
	}
}

// TestRepairIsTriedFirst: with every method, a repair request wins over an
// empty node.
func TestRepairIsTriedFirst(t *testing.T) {
	def := makePool("default").obj()
	large := catalog()[2]
	in := input([]*v1.NodePool{def},
		makeNode("a", def, large, zoneA, v1.CapacityTypeOnDemand).obj(),
		makeNode("b", def, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p1", "web", "1")).notReady().obj())
	in.Repairs = map[string]string{"b": "Ready=False"}
	out := disruption.Decide(in, disruption.Options{})
	if out.Command == nil || out.Command.Method != disruption.MethodRepair || out.Command.Candidates[0].Name() != "b" {
		t.Fatalf("command %+v, want the repair of b", summarize(out.Command))
	}
	if _, ok := out.Durations[disruption.MethodRepair]; ok {
		t.Error("repair's duration is reported as a disruption method's")
	}
	// Without the request, the empty node is deleted as before.
	in.Repairs = nil
	if out := disruption.Decide(in, disruption.Options{}); out.Command == nil || out.Command.Method != disruption.MethodEmptiness {
		t.Fatalf("command %+v, want emptiness", summarize(out.Command))
	}
}

// TestRepairWithoutNodePool: a claim whose NodePool is gone is still
// repaired (deleted: nothing can launch for it), under its pool's name.
func TestRepairWithoutNodePool(t *testing.T) {
	gone := makePool("gone").obj()
	def := makePool("default").obj()
	n := makeNode("a", gone, catalog()[2], zoneA, v1.CapacityTypeOnDemand).notReady().obj()
	n.NodeClaim.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	in := input([]*v1.NodePool{def}, n)
	in.Repairs = map[string]string{"a": "Ready=Unknown"}
	out := disruption.Decide(in, disruption.Options{})
	if out.Command == nil || out.Command.Method != disruption.MethodRepair {
		t.Fatalf("command %+v, want a repair", summarize(out.Command))
	}
	if got := out.Command.Candidates[0].NodePool.Name; got != "gone" {
		t.Errorf("candidate's NodePool %q, want the stand-in named gone", got)
	}
}
