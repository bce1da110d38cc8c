package lifecycle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

func insufficientCapacityEvent(nc *v1.NodeClaim, err error) events.Event {
	return events.Event{InvolvedObject: nc, Type: corev1.EventTypeWarning, Reason: "InsufficientCapacityError",
		Message: fmt.Sprintf("NodeClaim %s event: %v", nc.Name, err), DedupeValues: []string{string(nc.UID)}}
}

func nodeClassNotReadyEvent(nc *v1.NodeClaim, err error) events.Event {
	return events.Event{InvolvedObject: nc, Type: corev1.EventTypeWarning, Reason: "NodeClassNotReady",
		Message: fmt.Sprintf("NodeClaim %s event: %v", nc.Name, err), DedupeValues: []string{string(nc.UID)}}
}

func launchFailedEvent(nc *v1.NodeClaim, reason, message string) events.Event {
	return events.Event{InvolvedObject: nc, Type: corev1.EventTypeWarning, Reason: "LaunchFailed",
		Message: fmt.Sprintf("Launching NodeClaim %s: %s: %s", nc.Name, reason, message), DedupeValues: []string{string(nc.UID), reason}}
}

func unregisteredTaintMissingEvent(node *corev1.Node) events.Event {
	return events.Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: "UnregisteredTaintMissing",
		Message:      fmt.Sprintf("Missing %s taint which prevents pods from scheduling before the node is registered", v1.UnregisteredTaintKey),
		DedupeValues: []string{string(node.UID)}}
}

func livenessTimeoutEvent(nc *v1.NodeClaim, what string) events.Event {
	return events.Event{InvolvedObject: nc, Type: corev1.EventTypeWarning, Reason: "FailedLaunch",
		Message: fmt.Sprintf("Deleting NodeClaim %s: %s", nc.Name, what), DedupeValues: []string{string(nc.UID)}}
}
