package provisioning

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
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

// TestPodTriggerWithEarlyProvisioning: a group's first marked pod opens a
// batch and its siblings marked while it is open do not; a pod planned onto
// a NodeClaim being launched does not; a pod without siblings does; after
// the batch is collected the group opens the next one. Without the gate
// every marked pod triggers.
func TestPodTriggerWithEarlyProvisioning(t *testing.T) {
	marked := func(name, owner string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"pod-template-hash": "h"}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			}}},
		}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}
		}
		return p
	}
	for _, early := range []bool{true, false} {
		clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
		cluster := state.NewCluster(clk)
		p := NewProvisioner(clk, nil, cluster, nil, nil, nil, Options{EarlyProvisioning: early})
		tr := NewPodTrigger(p)
		queued := func() bool {
			select {
			case <-p.batcher.trigger:
				return true
			default:
				return false
			}
		}
		// web-2 is planned onto a claim being launched.
		cluster.UpdatePod(marked("web-2", "web"))
		cluster.AddCreatedNodeClaim(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-1"}})
		cluster.PlanPods("nc-1", []types.NamespacedName{{Namespace: "ns", Name: "web-2"}})
		steps := []struct {
			pod       *corev1.Pod
			wantEarly bool
		}{
			{marked("web-0", "web"), true},
			{marked("web-1", "web"), false}, // the batch web-0 opened holds it
			{marked("web-2", "web"), false}, // planned onto nc-1
			{marked("api-0", "api"), true},  // another group
			{marked("lone", ""), true},      // no siblings
		}
		for _, s := range steps {
			tr.observe(s.pod)
			want := s.wantEarly || !early
			if got := queued(); got != want {
				t.Errorf("EarlyProvisioning=%v, %s marked: triggered %v, want %v", early, s.pod.Name, got, want)
			}
		}
		if early {
			p.batcher.Trigger()
			if !p.batcher.Wait(context.Background(), time.Hour) {
				t.Fatal("Wait returned false")
			}
			tr.observe(marked("web-3", "web"))
			if !queued() {
				t.Error("the group's next marked pod did not open the next batch")
			}
		}
	}
}
