package eviction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Event reasons, named as Karpenter's so that alerts on them keep working.
const (
	// ReasonEvicted is published on a pod the queue evicted.
	ReasonEvicted = "Evicted"
	// ReasonFailedDraining is published on a node when one of its pods
	// cannot be evicted.
	ReasonFailedDraining = "FailedDraining"
)

func evictedEvent(key Key, reason string) events.Event {
	return events.Event{
		InvolvedObject: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: key.UID}},
		Type:           corev1.EventTypeNormal,
		Reason:         ReasonEvicted,
		Message:        "Evicted pod: " + reason,
		DedupeValues:   []string{string(key.UID)},
	}
}

func blockedEvent(nodeName string, nodeUID types.UID, key Key, why string) events.Event {
	return events.Event{
		InvolvedObject: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: nodeUID}},
		Type:           corev1.EventTypeWarning,
		Reason:         ReasonFailedDraining,
		Message:        fmt.Sprintf("Failed to drain node, evicting Pod %s/%s: %s", key.Namespace, key.Name, why),
		DedupeValues:   []string{nodeName, key.Namespace, key.Name},
	}
}
