package state

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestDaemonSetSizing checks the requests of the daemonsets the model
// hands the simulator: the newest pod of the daemonset when one was seen
// (even after it went), else the template with LimitRange defaults.
func TestDaemonSetSizing(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent"}},
		}}},
	}
	dsPod := func(name string, created time.Time, cpu string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created),
				OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}},
			},
			Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "agent", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}}},
		}
	}
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")},
		}}},
	}
	cases := map[string]struct {
		apply   func(c *Cluster)
		wantCPU string
	}{
		"template alone":               {wantCPU: "0"},
		"template with the LimitRange": {apply: func(c *Cluster) { c.UpdateLimitRange(lr) }, wantCPU: "700m"},
		"LimitRange deleted": {apply: func(c *Cluster) {
			c.UpdateLimitRange(lr)
			c.DeleteLimitRange(types.NamespacedName{Namespace: "ns", Name: "defaults"})
		}, wantCPU: "0"},
		"an existing pod wins": {apply: func(c *Cluster) { c.UpdateLimitRange(lr); c.UpdateDaemonSetPod(dsPod("a", t0, "300m")) }, wantCPU: "300m"},
		"the newest pod wins": {apply: func(c *Cluster) {
			c.UpdateDaemonSetPod(dsPod("b", t0.Add(time.Hour), "400m"))
			c.UpdateDaemonSetPod(dsPod("a", t0, "300m"))
		}, wantCPU: "400m"},
		"the pod is kept after it is gone": {apply: func(c *Cluster) {
			c.UpdateDaemonSetPod(dsPod("a", t0, "300m"))
			c.DeletePod(types.NamespacedName{Namespace: "ns", Name: "a"})
		}, wantCPU: "300m"},
		"pods of other owners are ignored": {apply: func(c *Cluster) {
			p := dsPod("a", t0, "300m")
			p.OwnerReferences[0].Kind = "ReplicaSet"
			c.UpdateDaemonSetPod(p)
		}, wantCPU: "0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(t0))
			c.UpdateDaemonSet(ds)
			if tc.apply != nil {
				tc.apply(c)
			}
			got := c.DaemonSets()
			if len(got) != 1 {
				t.Fatalf("got %d daemonsets, want 1", len(got))
			}
			cpu := got[0].Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			want := resource.MustParse(tc.wantCPU)
			if diff := cmp.Diff(want.MilliValue(), cpu.MilliValue()); diff != "" {
				t.Errorf("daemon cpu request in millicores (-want +got):\n%s", diff)
			}
		})
	}
}
