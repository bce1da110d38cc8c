package disruption_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// heldPod is a replica of the "held" workload: 100m, one per node
// (required hostname anti-affinity), as in the e2e test
// TestNoPodPlannedTwiceWhileBindingIsHeld.
func heldPod(name string) *corev1.Pod {
	selector := map[string]string{"app": "held"}
	return dtesting.MakePod(name).Label("app", "held").Req("cpu", "100m").Req("memory", "128Mi").
		PodAntiAffinity(corev1.LabelHostname, selector).Obj()
}

// pendingHeldPod is a replica the kube-scheduler marked unschedulable.
func pendingHeldPod(name string) *corev1.Pod {
	p := heldPod(name)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	return p
}

// inZoneB keeps a pod to zone-b.
func inZoneB(p *corev1.Pod) *corev1.Pod {
	p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zoneB}
	return p
}

// TestConsolidationKeepsThePendingPodsRoom is the state the e2e test
// TestNoPodPlannedTwiceWhileBindingIsHeld failed in: the kube-scheduler
// bound a few replicas to nodes launched for others before it was paused,
// so those nodes hold a pod that bound and nobody waits for them, while
// the other nodes are empty and nominated for the replicas still pending
// (one node each). Moving a bound replica onto a nominated node takes the
// room a pending replica needs: consolidation must not count on it.
// The candidates' pods sort before the pending ones, so the simulation
// places them first.
func TestConsolidationKeepsThePendingPodsRoom(t *testing.T) {
	np := makePool("default").obj()
	small := catalog()[0]
	node := func(name string) *nodeWrapper { return makeNode(name, np, small, zoneA, v1.CapacityTypeOnDemand) }
	awaited := now.Add(time.Minute)
	cases := map[string]struct {
		nodes   []*machine.Machine
		pending []*corev1.Pod
		refused map[types.UID][]string
		want    *summary
		blocked string
	}{
		"no room but the pending pods' is left": {
			nodes: []*machine.Machine{
				node("n1").pods(heldPod("a-bound-1")).obj(),
				node("n2").pods(heldPod("a-bound-2")).obj(),
				node("n3").nominated(awaited).obj(),
				node("n4").nominated(awaited).obj(),
			},
			pending: []*corev1.Pod{pendingHeldPod("z-pending-1"), pendingHeldPod("z-pending-2")},
			blocked: "pending pod default/z-pending-",
		},
		"a pending pod that has no room anyway does not hold consolidation back": {
			nodes: []*machine.Machine{
				node("n1").pods(heldPod("a-bound-1")).obj(),
				node("n2").nominated(awaited).obj(),
			},
			// Only a new node in zone-b fits it, with or without the move.
			pending: []*corev1.Pod{inZoneB(pendingHeldPod("z-pending-1"))},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete,
				Candidates: []string{"n1"}},
		},
		"a pending pod does not hold room its hand-off gave up on": {
			// The kube-scheduler kept clearing the pod's nomination to n2
			// (Refused): provisioning plans it elsewhere, so n2's room is
			// not the pod's, as in the provisioner's own plan.
			nodes: []*machine.Machine{
				node("n1").pods(heldPod("a-bound-1")).obj(),
				node("n2").nominated(awaited).obj(),
			},
			pending: []*corev1.Pod{pendingHeldPod("z-pending-1")},
			refused: map[types.UID][]string{"uid-default-z-pending-1": {"n2"}},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete,
				Candidates: []string{"n1"}},
		},
		"room left over after the pending pods is used": {
			nodes: []*machine.Machine{
				node("n1").pods(heldPod("a-bound-1")).obj(),
				node("n2").pods(heldPod("a-bound-2")).obj(),
				node("n3").nominated(awaited).obj(),
				node("n4").nominated(awaited).obj(),
				node("n5").nominated(awaited).obj(),
			},
			pending: []*corev1.Pod{pendingHeldPod("z-pending-1"), pendingHeldPod("z-pending-2")},
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete,
				Candidates: []string{"n1"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input([]*v1.NodePool{np}, tc.nodes...)
			in.PendingPods = tc.pending
			in.Refused = tc.refused
			out := disruption.Decide(in, disruption.Options{})
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if tc.blocked == "" {
				return
			}
			found := false
			for _, m := range messages(out.Blocked) {
				if strings.Contains(m, tc.blocked) {
					found = true
				}
			}
			if !found {
				t.Errorf("no Blocked message mentions %q: %v", tc.blocked, messages(out.Blocked))
			}
		})
	}
}

// TestValidateKeepsThePendingPodsRoom: a move decided while no pod was
// pending is dropped at validation once pods that need its room are.
func TestValidateKeepsThePendingPodsRoom(t *testing.T) {
	np := makePool("default").obj()
	small := catalog()[0]
	nodes := func() []*machine.Machine {
		return []*machine.Machine{
			makeNode("n1", np, small, zoneA, v1.CapacityTypeOnDemand).pods(heldPod("a-bound-1")).obj(),
			makeNode("n2", np, small, zoneA, v1.CapacityTypeOnDemand).nominated(now.Add(time.Minute)).obj(),
		}
	}
	out := disruption.Decide(input([]*v1.NodePool{np}, nodes()...), disruption.Options{})
	if out.Command == nil {
		t.Fatalf("no command without pending pods; blocked: %v", messages(out.Blocked))
	}
	later := input([]*v1.NodePool{np}, nodes()...)
	later.Now = now.Add(15 * time.Second)
	later.PendingPods = []*corev1.Pod{pendingHeldPod("z-pending-1")}
	got, err := disruption.Validate(out.Command, later, disruption.Options{})
	var verr *disruption.ValidationError
	if !errors.As(err, &verr) || verr.Kind != disruption.ValidationScheduling || !strings.Contains(verr.Message, "pending pod default/z-pending-1") {
		t.Fatalf("Validate = %+v, %v; want a scheduling validation error naming the pending pod", summarize(got), err)
	}
}
