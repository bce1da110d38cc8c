package podutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
		"daemonset pod":                  {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}}, Status: unschedulable()}},
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

// TestDoNotDisrupt is the one reading of karpenter.sh/do-not-disrupt that
// disruption and termination share, with Karpenter's semantics.
func TestDoNotDisrupt(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	pod := func(value string, started *time.Time) *corev1.Pod {
		// Created long ago: a duration is never measured from creation.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		if value != "" {
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: value}
		}
		if started != nil {
			p.Status.StartTime = &metav1.Time{Time: *started}
		}
		return p
	}
	minuteAgo, fiveMinutesAgo := now.Add(-time.Minute), now.Add(-5*time.Minute)
	cases := map[string]struct {
		pod  *corev1.Pod
		want Protection
	}{
		"absent":                            {pod: pod("", &minuteAgo)},
		"true":                              {pod: pod("true", &fiveMinutesAgo), want: Protection{Active: true}},
		"true, not started":                 {pod: pod("true", nil), want: Protection{Active: true}},
		"duration, still protected":         {pod: pod("5m", &minuteAgo), want: Protection{Active: true, Until: now.Add(4 * time.Minute)}},
		"duration, lapsed at the instant":   {pod: pod("5m", &fiveMinutesAgo), want: Protection{Until: now}},
		"duration, not started: fails safe": {pod: pod("5m", nil), want: Protection{Active: true}},
		"zero duration is invalid":          {pod: pod("0s", &minuteAgo), want: Protection{Invalid: true}},
		"negative duration is invalid":      {pod: pod("-5m", &minuteAgo), want: Protection{Invalid: true}},
		"false is invalid":                  {pod: pod("false", &minuteAgo), want: Protection{Invalid: true}},
		"garbage is invalid":                {pod: pod("soon", nil), want: Protection{Invalid: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := DoNotDisrupt(tc.pod, now); got != tc.want {
				t.Errorf("DoNotDisrupt() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestOwnership checks the DaemonSet and mirror predicates against owner
// references as Karpenter reads them: by apiVersion and kind.
func TestOwnership(t *testing.T) {
	owned := func(refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: refs}}
	}
	cases := map[string]struct {
		pod                    *corev1.Pod
		wantDaemon, wantMirror bool
	}{
		"no owner":                        {pod: owned()},
		"daemonset controller":            {pod: owned(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}), wantDaemon: true},
		"daemonset owner, not controller": {pod: owned(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds"}), wantDaemon: true},
		"another group's DaemonSet kind":  {pod: owned(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)})},
		"replicaset":                      {pod: owned(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)})},
		"owned by its node":               {pod: owned(metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n"}), wantMirror: true},
		"another group's Node kind":       {pod: owned(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Node", Name: "n"})},
		"mirror annotation":               {pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, wantMirror: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsOwnedByDaemonSet(tc.pod); got != tc.wantDaemon {
				t.Errorf("IsOwnedByDaemonSet() = %v, want %v", got, tc.wantDaemon)
			}
			if got := IsMirror(tc.pod); got != tc.wantMirror {
				t.Errorf("IsMirror() = %v, want %v", got, tc.wantMirror)
			}
		})
	}
}

func TestToleratesDisruptedTaint(t *testing.T) {
	cases := map[string]struct {
		toleration corev1.Toleration
		want       bool
	}{
		"none":                       {},
		"everything":                 {toleration: corev1.Toleration{Operator: corev1.TolerationOpExists}, want: true},
		"all NoSchedule":             {toleration: corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, want: true},
		"the disrupted key":          {toleration: corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}, want: true},
		"the key, NoExecute only":    {toleration: corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		"the key, equal empty value": {toleration: corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpEqual}, want: true},
		"another key":                {toleration: corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{}
			if tc.toleration != (corev1.Toleration{}) {
				pod.Spec.Tolerations = []corev1.Toleration{tc.toleration}
			}
			if got := ToleratesDisruptedTaint(pod); got != tc.want {
				t.Errorf("ToleratesDisruptedTaint() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAwaitingFirstAttempt(t *testing.T) {
	now := metav1.Now()
	untried := corev1.PodStatus{Phase: corev1.PodPending}
	cases := map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"not yet tried by the scheduler": {pod: corev1.Pod{Status: untried}, want: true},
		"marked unschedulable":           {pod: corev1.Pod{Status: unschedulable()}},
		"scheduled condition true":       {pod: corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}}},
		"bound":                          {pod: corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: untried}},
		"nominated":                      {pod: corev1.Pod{Status: corev1.PodStatus{NominatedNodeName: "n"}}},
		"being deleted":                  {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: untried}},
		"succeeded":                      {pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}},
		"daemonset pod":                  {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}}, Status: untried}},
		"mirror pod":                     {pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}, Status: untried}},
		"scheduling gates, not yet seen": {pod: corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/wait"}}}, Status: untried}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := AwaitingFirstAttempt(&tc.pod); got != tc.want {
				t.Errorf("AwaitingFirstAttempt() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSiblingKey(t *testing.T) {
	pod := func(ownerUID string, controller bool, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		if ownerUID != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: types.UID(ownerUID), Controller: ptr.To(controller)}}
		}
		return p
	}
	key := func(p *corev1.Pod) string {
		k, ok := SiblingKey(p)
		if !ok {
			return "none"
		}
		return k
	}
	a := pod("rs-1", true, map[string]string{"pod-template-hash": "abc", "app": "x"})
	for name, tc := range map[string]struct {
		other *corev1.Pod
		same  bool
	}{
		"same ReplicaSet, other labels": {pod("rs-1", true, map[string]string{"pod-template-hash": "abc", "app": "y"}), true},
		"another ReplicaSet":            {pod("rs-2", true, map[string]string{"pod-template-hash": "abc"}), false},
		"same owner, another template":  {pod("rs-1", true, map[string]string{"pod-template-hash": "def"}), false},
		"same owner, another revision":  {pod("rs-1", true, map[string]string{"pod-template-hash": "abc", "controller-revision-hash": "r2"}), false},
		"owned but not by a controller": {pod("rs-1", false, map[string]string{"pod-template-hash": "abc"}), false},
		"no owner":                      {pod("", false, map[string]string{"pod-template-hash": "abc"}), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := key(a) == key(tc.other); got != tc.same {
				t.Errorf("siblings = %v (keys %q and %q), want %v", got, key(a), key(tc.other), tc.same)
			}
		})
	}
	if k := key(pod("", false, nil)); k != "none" {
		t.Errorf("a pod without a controller has key %q, want none", k)
	}
	// Only the controllers whose pods share one template make siblings.
	for _, tc := range []struct {
		apiVersion, kind string
		siblings         bool
	}{
		{"apps/v1", "ReplicaSet", true}, {"apps/v1", "StatefulSet", true}, {"batch/v1", "Job", true},
		{"kubeflow.org/v1", "PyTorchJob", false}, {"v1", "Pod", false}, {"apps/v1", "DaemonSet", false},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: tc.apiVersion, Kind: tc.kind, Name: "o", UID: "u", Controller: ptr.To(true)}}}}
		if _, ok := SiblingKey(p); ok != tc.siblings {
			t.Errorf("a pod of a %s %s has siblings = %v, want %v", tc.apiVersion, tc.kind, ok, tc.siblings)
		}
	}
}

// TestHasRequiredSpread: only a DoNotSchedule topology spread constraint
// is a filter; ScheduleAnyway only scores.
func TestHasRequiredSpread(t *testing.T) {
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
		{"no constraint", spread(), false},
		{"ScheduleAnyway", spread(corev1.ScheduleAnyway), false},
		{"DoNotSchedule", spread(corev1.DoNotSchedule), true},
		{"both", spread(corev1.ScheduleAnyway, corev1.DoNotSchedule), true},
		{"pod affinity only", &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}}}, false},
	} {
		if got := HasRequiredSpread(tc.pod); got != tc.want {
			t.Errorf("%s: HasRequiredSpread = %v, want %v", tc.name, got, tc.want)
		}
	}
}
