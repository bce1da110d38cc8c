package podutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func unschedulable() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
}

func TestIsProvisionable(t *testing.T) {
	now := metav1.Now()
	cases := map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"unschedulable pending pod":      {pod: corev1.Pod{Status: unschedulable()}, want: true},
		"not yet tried by the scheduler": {pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}},
		"bound":                          {pod: corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: unschedulable()}},
		"preempting":                     {pod: corev1.Pod{Status: func() corev1.PodStatus { s := unschedulable(); s.NominatedNodeName = "n"; return s }()}},
		"being deleted":                  {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: unschedulable()}},
		"daemonset pod":                  {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}}, Status: unschedulable()}},
		"mirror pod":                     {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}, Status: unschedulable()}},
		"scheduling gated":               {pod: corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsProvisionable(&tc.pod); got != tc.want {
				t.Errorf("IsProvisionable() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDoNotDisrupt(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(value string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(start)}, Status: corev1.PodStatus{StartTime: &metav1.Time{Time: start}}}
		if value != "" {
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: value}
		}
		return p
	}
	cases := map[string]struct {
		value      string
		now        time.Time
		wantBlocks bool
		wantValid  bool
	}{
		"absent":               {now: start, wantValid: true},
		"true":                 {value: "true", now: start.Add(1000 * time.Hour), wantBlocks: true, wantValid: true},
		"duration not elapsed": {value: "5m", now: start.Add(4 * time.Minute), wantBlocks: true, wantValid: true},
		"duration elapsed":     {value: "5m", now: start.Add(5 * time.Minute), wantValid: true},
		"false":                {value: "false", now: start},
		"garbage":              {value: "soon", now: start},
		"negative duration":    {value: "-5m", now: start},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			blocks, valid := DoNotDisrupt(pod(tc.value), tc.now)
			if blocks != tc.wantBlocks || valid != tc.wantValid {
				t.Errorf("DoNotDisrupt() = (%v, %v), want (%v, %v)", blocks, valid, tc.wantBlocks, tc.wantValid)
			}
		})
	}
}

func TestToleratesDisruptedTaint(t *testing.T) {
	tolerating := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
	plain := &corev1.Pod{}
	if !ToleratesDisruptedTaint(tolerating) || ToleratesDisruptedTaint(plain) {
		t.Errorf("ToleratesDisruptedTaint: tolerate-all %v, none %v", ToleratesDisruptedTaint(tolerating), ToleratesDisruptedTaint(plain))
	}
}
