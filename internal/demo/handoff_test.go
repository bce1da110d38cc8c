package demo

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
)

func TestFollowPlan(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 28, 8, 0, s, 0, time.UTC)) }
	pod := func(uid, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
	}
	nominated := func(uid, claim string, second int) corev1.Event {
		return corev1.Event{
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", UID: types.UID(uid)},
			Reason:         provisioning.NominatedReason, Message: "Pod should schedule on: nodeclaim/" + claim, LastTimestamp: at(second),
		}
	}
	claim := func(name, node string) v1.NodeClaim {
		return v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeClaimStatus{NodeName: node}}
	}
	node := func(name string) corev1.Node { return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	deleting := pod("d", "n2")
	deleting.DeletionTimestamp = &metav1.Time{}

	for name, tc := range map[string]struct {
		pods   []corev1.Pod
		events []corev1.Event
		claims []v1.NodeClaim
		nodes  []corev1.Node
		want   planFollowed
	}{
		"every pod where planned": {
			pods:   []corev1.Pod{pod("a", "n1"), pod("b", "n2")},
			events: []corev1.Event{nominated("a", "c1", 1), nominated("b", "c2", 1)},
			claims: []v1.NodeClaim{claim("c1", "n1"), claim("c2", "n2")},
			nodes:  []corev1.Node{node("n1"), node("n2")},
			want:   planFollowed{onPlan: 2},
		},
		"the scheduler bound a node's planned pods elsewhere": {
			pods:   []corev1.Pod{pod("a", "n1"), pod("b", "n1"), pod("c", "n1")},
			events: []corev1.Event{nominated("a", "c1", 1), nominated("b", "c2", 1), nominated("c", "c2", 1)},
			claims: []v1.NodeClaim{claim("c1", "n1"), claim("c2", "n2")},
			nodes:  []corev1.Node{node("n1"), node("n2")},
			want:   planFollowed{onPlan: 1, offPlan: 2, missed: 1},
		},
		"a node no pod was planned onto": {
			pods:   []corev1.Pod{pod("a", "n1")},
			events: []corev1.Event{nominated("a", "c1", 1)},
			claims: []v1.NodeClaim{claim("c1", "n1"), claim("c2", "n2")},
			nodes:  []corev1.Node{node("n1"), node("n2")},
			want:   planFollowed{onPlan: 1, unused: 1},
		},
		"a second plan for a pod already planned, the pod bound to its first node": {
			pods:   []corev1.Pod{pod("a", "n1")},
			events: []corev1.Event{nominated("a", "c1", 1), nominated("a", "c9", 2)},
			claims: []v1.NodeClaim{claim("c1", "n1"), claim("c9", "n9")},
			nodes:  []corev1.Node{node("n1"), node("n9")},
			want:   planFollowed{offPlan: 1, unused: 1},
		},
		"the latest plan counts": {
			pods:   []corev1.Pod{pod("a", "n2")},
			events: []corev1.Event{nominated("a", "c2", 5), nominated("a", "c1", 1)},
			claims: []v1.NodeClaim{claim("c1", "n1"), claim("c2", "n2")},
			nodes:  []corev1.Node{node("n1"), node("n2")},
			want:   planFollowed{onPlan: 1, unused: 1},
		},
		"no plan, a claim without a node, other events, pending and deleted pods": {
			pods: []corev1.Pod{pod("a", "n1"), pod("b", ""), pod("c", "n1"), deleting},
			events: []corev1.Event{
				nominated("a", "c3", 1),
				{InvolvedObject: corev1.ObjectReference{Kind: "Pod", UID: "c"}, Reason: "Scheduled", Message: "Pod should schedule on: nodeclaim/c1"},
				{InvolvedObject: corev1.ObjectReference{Kind: "Pod", UID: "c"}, Reason: provisioning.NominatedReason, Message: "Pod should schedule on: node/n1"},
			},
			claims: []v1.NodeClaim{claim("c1", "n1"), claim("c3", "")},
			nodes:  []corev1.Node{node("n1")},
			want:   planFollowed{unplanned: 2},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := followPlan(tc.pods, tc.events, tc.claims, tc.nodes); got != tc.want {
				t.Errorf("followPlan = %+v, want %+v", got, tc.want)
			}
		})
	}
}
