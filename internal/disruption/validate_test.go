package disruption_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// TestValidate: a command decided 15 s ago is carried out only if it still
// holds on the current view of the cluster.
func TestValidate(t *testing.T) {
	np := makePool("default").obj()
	small, large := catalog()[0], catalog()[2]
	later := now.Add(15 * time.Second)
	guard := func(w *nodeWrapper) *machine.Machine {
		return w.annotateNode(v1.DoNotDisruptAnnotationKey, "true").obj()
	}
	emptyPair := func() []*machine.Machine {
		return []*machine.Machine{
			makeNode("a", np, small, zoneA, v1.CapacityTypeOnDemand).obj(),
			makeNode("b", np, small, zoneA, v1.CapacityTypeOnDemand).obj(),
		}
	}
	deletable := func() []*machine.Machine {
		return []*machine.Machine{
			makeNode("a", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p1", "web", "1")).obj(),
			guard(makeNode("b", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p2", "web", "1"))),
		}
	}
	cases := map[string]struct {
		before   []*machine.Machine
		after    func() ([]*machine.Machine, *poolWrapper)
		want     *summary
		wantKind string
	}{
		"emptiness still holds": {
			before: emptyPair(),
			after:  func() ([]*machine.Machine, *poolWrapper) { return emptyPair(), nil },
			want:   &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"a", "b"}},
		},
		"emptiness keeps the nodes that are still empty": {
			before: emptyPair(),
			after: func() ([]*machine.Machine, *poolWrapper) {
				nodes := emptyPair()
				nodes[0] = makeNode("a", np, small, zoneA, v1.CapacityTypeOnDemand).pods(pod("new", "web", "100m")).lastPodEvent(time.Second).obj()
				return nodes, nil
			},
			want: &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"b"}},
		},
		"emptiness fails when no node is empty any more": {
			before: emptyPair()[:1],
			after: func() ([]*machine.Machine, *poolWrapper) {
				return []*machine.Machine{makeNode("a", np, small, zoneA, v1.CapacityTypeOnDemand).pods(pod("new", "web", "100m")).obj()}, nil
			},
			wantKind: disruption.ValidationChurn,
		},
		"emptiness within a budget that shrank": {
			before: emptyPair(),
			after: func() ([]*machine.Machine, *poolWrapper) {
				return emptyPair(), makePool("default").budgets(budget("1"))
			},
			want: &summary{Method: disruption.MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"consolidation still holds": {
			before: deletable(),
			after:  func() ([]*machine.Machine, *poolWrapper) { return deletable(), nil },
			want:   &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
		},
		"a do-not-disrupt pod arrived": {
			before: deletable(),
			after: func() ([]*machine.Machine, *poolWrapper) {
				nodes := deletable()
				nodes[0].Pods = append(nodes[0].Pods, annotate(pod("new", "web", "100m"), v1.DoNotDisruptAnnotationKey, "true"))
				return nodes, nil
			},
			wantKind: disruption.ValidationChurn,
		},
		"a pod arrived (consolidateAfter restarts)": {
			before: deletable(),
			after: func() ([]*machine.Machine, *poolWrapper) {
				nodes := deletable()
				nodes[0].NodeClaim.Status.LastPodEventTime.Time = later.Add(-time.Second)
				return nodes, nil
			},
			wantKind: disruption.ValidationChurn,
		},
		"the budget closed": {
			before: deletable(),
			after: func() ([]*machine.Machine, *poolWrapper) {
				return deletable(), makePool("default").budgets(budget("0"))
			},
			wantKind: disruption.ValidationBudget,
		},
		"the destination filled up": {
			before: deletable(),
			after: func() ([]*machine.Machine, *poolWrapper) {
				nodes := deletable()
				nodes[1] = guard(makeNode("b", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p2", "web", "7500m")))
				return nodes, nil
			},
			wantKind: disruption.ValidationScheduling,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := disruption.Decide(input([]*v1.NodePool{np}, tc.before...), disruption.Options{})
			if out.Command == nil {
				t.Fatalf("no command to validate; blocked %q", messages(out.Blocked))
			}
			nodes, pw := tc.after()
			pool := np
			if pw != nil {
				pool = pw.obj()
			}
			in := input([]*v1.NodePool{pool}, nodes...)
			in.Now = later
			got, err := disruption.Validate(out.Command, in, disruption.Options{})
			if tc.wantKind != "" {
				var verr *disruption.ValidationError
				if !disruption.IsValidationError(err) || !errors.As(err, &verr) || verr.Kind != tc.wantKind {
					t.Fatalf("error = %v, want a %s validation error", err, tc.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatalf("validation failed: %v", err)
			}
			if diff := cmp.Diff(tc.want, summarize(got)); diff != "" {
				t.Errorf("validated command (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateSkipsDrift: drift is eventual and not validated.
func TestValidateSkipsDrift(t *testing.T) {
	np := makePool("default").obj()
	node := makeNode("a", np, catalog()[2], zoneA, v1.CapacityTypeOnDemand).pods(pod("p1", "web", "1")).lastPodEvent(time.Second).drifted(time.Minute).obj()
	out := disruption.Decide(input([]*v1.NodePool{np}, node), disruption.Options{})
	if out.Command == nil || out.Command.Method != disruption.MethodDrift {
		t.Fatalf("want a drift command, got %+v", summarize(out.Command))
	}
	got, err := disruption.Validate(out.Command, disruption.Input{Now: now}, disruption.Options{})
	if err != nil || got != out.Command {
		t.Errorf("Validate(drift) = %v, %v; want the command unchanged", summarize(got), err)
	}
}

// TestValidateRescoresBalancedMoves: a Balanced pool's move approved at
// decision time is scored again at validation, on the current pool: a node
// that joined the pool meanwhile (more cost, little more disruption), or a
// lower consolidationThreshold, can leave it below the threshold, and it is
// then dropped rather than carried out.
func TestValidateRescoresBalancedMoves(t *testing.T) {
	large := catalog()[2]
	pool := func(k int32) *v1.NodePool {
		np := makePool("balanced").policy(v1.ConsolidationPolicyBalanced).
			req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
		np.Spec.Disruption.ConsolidationThreshold = ptr.To(k)
		return np
	}
	k1, k3 := pool(1), pool(3)
	node := func(name string, np *v1.NodePool) *nodeWrapper {
		return makeNode(name, np, large, zoneA, v1.CapacityTypeOnDemand)
	}
	guard := func(w *nodeWrapper) *machine.Machine {
		return w.annotateNode(v1.DoNotDisruptAnnotationKey, "true").obj()
	}
	// a's pod fits on b: deleting a saves half the pool's cost for half its
	// disruption, a score of exactly 1.
	pair := func(np *v1.NodePool) []*machine.Machine {
		return []*machine.Machine{
			node("a", np).pods(pod("p1", "web", "1")).obj(),
			guard(node("b", np).pods(pod("p2", "web", "1"))),
		}
	}
	// a's pods fit a medium: replacing it scores 0.35 (see TestBalancedDecisions).
	poorMove := func(np *v1.NodePool) []*machine.Machine {
		return []*machine.Machine{
			node("a", np).pods(pod("p1", "web", "750m"), pod("p2", "web", "750m"), pod("p3", "web", "750m"), pod("p4", "web", "750m")).obj(),
			guard(node("b", np).pods(pod("big", "db", "7"))),
		}
	}
	cases := map[string]struct {
		before, after         *v1.NodePool
		nodesBefore           []*machine.Machine
		nodesAfter            []*machine.Machine
		wantRejected          bool
		wantMessageSubstrings []string
	}{
		"nothing changed: still approved": {
			before: k1, after: k1, nodesBefore: pair(k1), nodesAfter: pair(k1),
		},
		"an empty node joined the pool: 0.83 < 1": {
			before: k1, after: k1, nodesBefore: pair(k1),
			nodesAfter:            append(pair(k1), guard(node("c", k1))),
			wantRejected:          true,
			wantMessageSubstrings: []string{"score 0.83 < threshold 1.00", "consolidationThreshold 1"},
		},
		"the threshold was lowered from 3 to 1": {
			before: k3, after: k1, nodesBefore: poorMove(k3), nodesAfter: poorMove(k1),
			wantRejected:          true,
			wantMessageSubstrings: []string{"score 0.35 < threshold 1.00"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := disruption.Decide(input([]*v1.NodePool{tc.before}, tc.nodesBefore...), disruption.Options{})
			if out.Command == nil {
				t.Fatalf("no command to validate; scores %+v", out.Scores)
			}
			in := input([]*v1.NodePool{tc.after}, tc.nodesAfter...)
			in.Now = now.Add(15 * time.Second)
			got, err := disruption.Validate(out.Command, in, disruption.Options{})
			if !tc.wantRejected {
				if err != nil || got == nil {
					t.Fatalf("validation failed: %v", err)
				}
				return
			}
			var verr *disruption.ValidationError
			if !errors.As(err, &verr) || verr.Kind != disruption.ValidationScheduling {
				t.Fatalf("error = %v, want a scheduling validation error carrying the score", err)
			}
			for _, want := range tc.wantMessageSubstrings {
				if !strings.Contains(verr.Message, want) {
					t.Errorf("message %q lacks %q", verr.Message, want)
				}
			}
		})
	}
}
