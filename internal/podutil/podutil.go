// Package podutil answers the questions about pods that several controllers
// ask the same way: is it waiting for capacity, would it move if its node
// went away, is it owned by a DaemonSet, is it critical, may it be disrupted.
package podutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

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

// IsOwnedByDaemonSet reports a pod controlled by a DaemonSet.
func IsOwnedByDaemonSet(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// IsOwnedByNode reports a pod controlled by its Node (a static pod's mirror).
func IsOwnedByNode(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "Node" {
			return true
		}
	}
	return false
}

// IsMirror reports the API mirror of a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok || IsOwnedByNode(pod)
}

// IsCritical reports a pod of priority class system-cluster-critical or
// system-node-critical; they are drained after the others.
func IsCritical(pod *corev1.Pod) bool {
	return pod.Spec.PriorityClassName == "system-cluster-critical" || pod.Spec.PriorityClassName == "system-node-critical"
}

// ToleratesDisruptedTaint reports a pod that tolerates karpenter.sh/disrupted:NoSchedule
// and so would be scheduled straight back onto a draining node; drain skips it.
func ToleratesDisruptedTaint(pod *corev1.Pod) bool {
	taint := v1.DisruptedNoScheduleTaint()
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &taint, true) {
			return true
		}
	}
	return false
}

// DoNotDisrupt reports whether the pod's karpenter.sh/do-not-disrupt
// annotation blocks voluntary disruption at now. The value "true" blocks
// always; a duration (for example "5m") blocks until that long after the pod
// started; anything else is invalid and does not block (ok=false).
func DoNotDisrupt(pod *corev1.Pod, now time.Time) (blocks bool, valid bool) {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return false, true
	}
	if value == "true" {
		return true, true
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return false, false
	}
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	return now.Before(start.Add(d)), true
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
