package provisioning

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// nominatedEvent tells a pod where it is expected to run.
func nominatedEvent(pod *corev1.Pod, target string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeNormal,
		Reason:         "Nominated",
		Message:        fmt.Sprintf("Pod should schedule on: %s", target),
		DedupeValues:   []string{string(pod.UID), target},
	}
}

// failedSchedulingEvent tells a pod why no node can be launched for it.
func failedSchedulingEvent(pod *corev1.Pod, reason string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeWarning,
		Reason:         "FailedScheduling",
		Message:        "Failed to schedule pod, " + reason,
		DedupeValues:   []string{string(pod.UID), reason},
		DedupeTimeout:  5 * time.Minute,
	}
}

// noInstanceTypesEvent tells a NodePool that its cloud provider offered nothing.
func noInstanceTypesEvent(np *v1.NodePool, err error) events.Event {
	return events.Event{
		InvolvedObject: np,
		Type:           corev1.EventTypeWarning,
		Reason:         "NoCompatibleInstanceTypes",
		Message:        fmt.Sprintf("NodePool has no instance types to launch: %v", err),
		DedupeValues:   []string{np.Name},
	}
}
