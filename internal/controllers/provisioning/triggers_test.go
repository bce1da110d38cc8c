package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

func TestPodTriggerFiresOncePerPendingPod(t *testing.T) {
	pending := func(uid string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID(uid)},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			}}},
		}
	}
	bound := pending("a")
	bound.Spec.NodeName = "n"
	tr := NewPodTrigger(nil)
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"first time pending", func() bool { return tr.firstTime(pending("a")) }, true},
		{"updated while still pending", func() bool { return tr.firstTime(pending("a")) }, false},
		{"recreated under the same name", func() bool { return tr.firstTime(pending("b")) }, true},
		{"bound", func() bool { return tr.firstTime(bound) }, false},
		{"pending again after being bound", func() bool { return tr.firstTime(pending("a")) }, true},
		{"after deletion", func() bool {
			tr.forget(types.NamespacedName{Namespace: "ns", Name: "p"})
			return tr.firstTime(pending("a"))
		}, true},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Errorf("%s: triggered %v, want %v", s.name, got, s.want)
		}
	}
}

func TestWorkloads(t *testing.T) {
	owned := func(name, owner string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
		if owner != "" {
			controller := true
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: &controller}}
		}
		return p
	}
	cases := map[string]struct {
		claims [][]*corev1.Pod
		placed []*corev1.Pod // on existing or in-flight machines
		want   int
	}{
		"one deployment over several claims": {claims: [][]*corev1.Pod{{owned("a", "rs1"), owned("b", "rs1")}, {owned("c", "rs1")}}, want: 1},
		"two workloads":                      {claims: [][]*corev1.Pod{{owned("a", "rs1")}, {owned("b", "rs2")}}, want: 2},
		"lone pods count one each":           {claims: [][]*corev1.Pod{{owned("a", ""), owned("b", "")}}, want: 2},
		"no claims":                          {want: 0},
		"placements count too":               {claims: [][]*corev1.Pod{{owned("a", "rs1")}}, placed: []*corev1.Pod{owned("b", "rs2")}, want: 2},
		"placements only":                    {placed: []*corev1.Pod{owned("a", "rs1"), owned("b", "rs2")}, want: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := &simulator.Plan{}
			for _, pods := range tc.claims {
				plan.NewNodeClaims = append(plan.NewNodeClaims, &simulator.NewNodeClaim{Pods: pods})
			}
			for _, pod := range tc.placed {
				plan.Placements = append(plan.Placements, simulator.Placement{Pod: pod, Node: "node-a"})
			}
			if got := workloads(plan); got != tc.want {
				t.Errorf("workloads = %d, want %d", got, tc.want)
			}
		})
	}
}
