package disruption_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
