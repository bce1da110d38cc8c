// Package podutil answers the questions about pods that several controllers
// ask the same way: is it waiting for capacity, would it move if its node
// went away, is it owned by a DaemonSet, is it critical, may it be disrupted.
// Provisioning, disruption and termination all use these predicates, so that
// a pod is never, say, protected by do-not-disrupt for one and not the other.
package podutil

import (
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// IsProvisionable reports a pod that the kube-scheduler could not place for
// lack of a fitting node: PodScheduled=False with reason Unschedulable, not
// bound, not preempting (no nominated node), not owned by a DaemonSet and not
// a mirror pod. These are the pods that trigger provisioning.
func IsProvisionable(pod *corev1.Pod) bool {
	return pod.Status.NominatedNodeName == "" && IsUnschedulable(pod)
}

// IsUnschedulable is IsProvisionable without the nomination check: a pod
// the kube-scheduler could not place, whether or not it is nominated to a
// node (by preemption, or by Dovetail for a node it launched).
func IsUnschedulable(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" &&
		pod.DeletionTimestamp == nil &&
		!IsTerminal(pod) &&
		!IsOwnedByDaemonSet(pod) &&
		!IsMirror(pod) &&
		failedToSchedule(pod)
}

func failedToSchedule(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// IsReschedulable reports a pod that would need a new home if its node went
// away: not terminal, not being deleted, not a DaemonSet or mirror pod.
func IsReschedulable(pod *corev1.Pod) bool {
	return !IsTerminal(pod) && pod.DeletionTimestamp == nil && !IsOwnedByDaemonSet(pod) && !IsMirror(pod)
}

// IsTerminal reports a pod that has succeeded or failed.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsOwnedByDaemonSet reports a pod with an apps/v1 DaemonSet among its
// owners, as Karpenter tells DaemonSet pods (whether or not the reference is
// marked as the controller).
func IsOwnedByDaemonSet(pod *corev1.Pod) bool {
	return isOwnedBy(pod, "apps/v1", "DaemonSet")
}

// IsOwnedByNode reports a pod owned by its v1 Node (a static pod's mirror).
func IsOwnedByNode(pod *corev1.Pod) bool {
	return isOwnedBy(pod, "v1", "Node")
}

func isOwnedBy(pod *corev1.Pod, apiVersion, kind string) bool {
	return slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.APIVersion == apiVersion && o.Kind == kind
	})
}

// IsMirror reports the API mirror of a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok || IsOwnedByNode(pod)
}

// The system critical priority classes.
const (
	SystemClusterCritical = "system-cluster-critical"
	SystemNodeCritical    = "system-node-critical"
)

// IsCritical reports a pod of priority class system-cluster-critical or
// system-node-critical; they are drained after the others.
func IsCritical(pod *corev1.Pod) bool {
	return pod.Spec.PriorityClassName == SystemClusterCritical || pod.Spec.PriorityClassName == SystemNodeCritical
}

// ToleratesDisruptedTaint reports a pod that tolerates karpenter.sh/disrupted:NoSchedule
// and so would be scheduled straight back onto a draining node; drain skips
// it and disruption does not count it as moving. Toleration operators are
// matched as the kube-scheduler does by default (no Gt/Lt comparisons; the
// taint has no value to compare anyway).
func ToleratesDisruptedTaint(pod *corev1.Pod) bool {
	taint := v1.DisruptedNoScheduleTaint()
	return slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
		return t.ToleratesTaint(logr.Discard(), &taint, false)
	})
}

// Protection is what a pod's karpenter.sh/do-not-disrupt annotation says at
// an instant.
type Protection struct {
	// Active is true while the annotation blocks voluntary disruption and
	// eviction of the pod.
	Active bool
	// Until is when a duration's protection lapses (start time + duration);
	// zero for "true", for a pod not started yet, or without a duration.
	Until time.Time
	// Invalid is true when the annotation is present but neither "true" nor
	// a positive duration; it then protects nothing.
	Invalid bool
}

// DoNotDisrupt reads the pod's karpenter.sh/do-not-disrupt annotation at now,
// with Karpenter's semantics (v1.12): "true" protects indefinitely; a
// positive Go duration such as "5m" protects until that long after the pod's
// status.startTime, and indefinitely while the pod has no start time (it
// fails safe rather than measuring from creation); any other value, zero and
// negative durations included, is invalid and protects nothing.
func DoNotDisrupt(pod *corev1.Pod, now time.Time) Protection {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return Protection{}
	}
	if value == "true" {
		return Protection{Active: true}
	}
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return Protection{Invalid: true}
	}
	if pod.Status.StartTime == nil {
		return Protection{Active: true}
	}
	until := pod.Status.StartTime.Add(d)
	return Protection{Active: now.Before(until), Until: until}
}

// IsReady reports a pod whose Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// AwaitingFirstAttempt reports a pod the kube-scheduler has not tried to
// place yet: unbound, not being deleted or terminal, not a DaemonSet or
// mirror pod, without scheduling gates or a nominated node, and without a
// PodScheduled condition (the scheduler sets one at its first attempt).
func AwaitingFirstAttempt(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || IsTerminal(pod) || IsOwnedByDaemonSet(pod) || IsMirror(pod) ||
		len(pod.Spec.SchedulingGates) > 0 || pod.Status.NominatedNodeName != "" {
		return false
	}
	return !slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
}

// SiblingKey identifies the pods one controller made from one template: a
// ReplicaSet's or a Job's pods, one revision of a StatefulSet's (the
// controller's UID and the pod-template-hash and controller-revision-hash
// labels). Siblings ask for the same resources and share their scheduling
// constraints (a StatefulSet's volumes aside), so when the kube-scheduler
// finds no node for one, it usually finds none for the others it has not
// tried yet. Pods without a controller, or whose controller is another
// kind (an operator's pods, a Spark driver's executors, which may differ
// in size), have no siblings.
func SiblingKey(pod *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || !siblingControllers[ref.APIVersion+"/"+ref.Kind] {
		return "", false
	}
	return string(ref.UID) + "/" + pod.Labels["pod-template-hash"] + "/" + pod.Labels["controller-revision-hash"], true
}

// siblingControllers are the controllers whose pods come from one
// template: apps/v1 ReplicaSets and StatefulSets, batch/v1 Jobs.
var siblingControllers = map[string]bool{"apps/v1/ReplicaSet": true, "apps/v1/StatefulSet": true, "batch/v1/Job": true}

// HasRequiredSpread reports whether a pod has a DoNotSchedule topology
// spread constraint, which the kube-scheduler enforces as a filter (a
// ScheduleAnyway one only scores).
func HasRequiredSpread(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}
