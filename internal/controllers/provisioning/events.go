package provisioning

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/runaway"
)

// NominatedReason is the reason of the event a pod gets when a pass plans
// it onto a new NodeClaim (Karpenter's, with the same message).
const NominatedReason = "Nominated"

// nominatedPrefix starts a Nominated event's message; the target follows.
const nominatedPrefix = "Pod should schedule on: "

// NominatedClaim returns the NodeClaim a Nominated event's message names,
// for readers of the events (the demo, the fidelity test).
func NominatedClaim(message string) (string, bool) {
	return strings.CutPrefix(message, nominatedPrefix+"nodeclaim/")
}

// nominatedEvent tells a pod where it is expected to run.
func nominatedEvent(pod *corev1.Pod, target string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeNormal,
		Reason:         NominatedReason,
		Message:        nominatedPrefix + target,
		DedupeValues:   []string{string(pod.UID), target},
	}
}

// FailedSchedulingMessage is the message of the FailedScheduling event a
// pod gets when no node can be launched for it, for the simulator's reason.
func FailedSchedulingMessage(reason string) string {
	return "Failed to schedule pod, " + reason
}

// failedSchedulingEvent tells a pod why no node can be launched for it.
func failedSchedulingEvent(pod *corev1.Pod, reason string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeWarning,
		Reason:         "FailedScheduling",
		Message:        FailedSchedulingMessage(reason),
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

// launchBackoffPodEvent tells a pod why no node is launched for it now.
func launchBackoffPodEvent(b runaway.Blocked) events.Event {
	return events.Event{
		InvolvedObject: b.Pod,
		Type:           corev1.EventTypeWarning,
		Reason:         "LaunchBackoff",
		Message: fmt.Sprintf("Not launching a node for this pod in NodePool %s until %s: %d node(s) launched for pods like it initialized and they did not schedule there "+
			"(look for a taint the node adds at boot, a scheduler plugin, or DaemonSet overhead)", b.Key.NodePool, b.Until.UTC().Format(time.RFC3339), b.Misses),
		DedupeValues: []string{string(b.Pod.UID), b.Key.NodePool, b.Until.String()},
	}
}

// launchBackoffNodePoolEvent tells a NodePool that a node it launched went
// unused and launches for that pod shape now back off.
func launchBackoffNodePoolEvent(np *v1.NodePool, m runaway.Miss) events.Event {
	return events.Event{
		InvolvedObject: np,
		Type:           corev1.EventTypeWarning,
		Reason:         "LaunchBackoff",
		Message: fmt.Sprintf("NodeClaim %s initialized but pod %s did not schedule on it; no new node for pods like it until %s (%d unused launch(es) in a row)",
			m.NodeClaim, m.Pod, m.Until.UTC().Format(time.RFC3339), m.Misses),
		DedupeValues: []string{np.Name, m.NodeClaim},
	}
}
