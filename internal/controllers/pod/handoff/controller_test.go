package handoff

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSuits: only pods without a DoNotSchedule topology spread constraint
// are handed off; ScheduleAnyway only scores, so it does not keep
// nominated pods off their node.
func TestSuits(t *testing.T) {
	spread := func(when ...corev1.UnsatisfiableConstraintAction) *corev1.Pod {
		pod := &corev1.Pod{}
		for _, w := range when {
			pod.Spec.TopologySpreadConstraints = append(pod.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: w,
			})
		}
		return pod
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"no constraint", spread(), true},
		{"ScheduleAnyway", spread(corev1.ScheduleAnyway), true},
		{"DoNotSchedule", spread(corev1.DoNotSchedule), false},
		{"both", spread(corev1.ScheduleAnyway, corev1.DoNotSchedule), false},
		{"pod affinity only", &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}}}, true},
	} {
		if got := Suits(tc.pod); got != tc.want {
			t.Errorf("%s: Suits = %v, want %v", tc.name, got, tc.want)
		}
	}
}
