package disruptionstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodEventNode(t *testing.T) {
	pod := func(node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}}
		p.Status.Phase = corev1.PodRunning
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	terminal := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }
	daemon := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
	}
	cases := map[string]struct {
		old, updated *corev1.Pod
		want         string
	}{
		"bound":                         {old: pod(""), updated: pod("n1"), want: "n1"},
		"still pending":                 {old: pod(""), updated: pod("")},
		"status change while running":   {old: pod("n1"), updated: pod("n1")},
		"finished":                      {old: pod("n1"), updated: pod("n1", terminal), want: "n1"},
		"started terminating":           {old: pod("n1"), updated: pod("n1", terminating), want: "n1"},
		"terminating, again":            {old: pod("n1", terminating), updated: pod("n1", terminating)},
		"deleted while running":         {old: pod("n1"), want: "n1"},
		"deleted after it was counted":  {old: pod("n1", terminating)},
		"deleted pending pod":           {old: pod("")},
		"daemonset pod bound":           {old: pod("", daemon), updated: pod("n1", daemon)},
		"daemonset pod deleted":         {old: pod("n1", daemon)},
		"deleted after it had finished": {old: pod("n1", terminal)},
		"finished pod started deleting": {old: pod("n1", terminal), updated: pod("n1", terminal, terminating), want: "n1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodEventNode(tc.old, tc.updated); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
