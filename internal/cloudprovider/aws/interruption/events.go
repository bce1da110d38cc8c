package interruption

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Event reasons, Karpenter's where Karpenter has one.
const (
	ReasonSpotInterrupted         = "SpotInterrupted"
	ReasonRebalanceRecommendation = "RebalanceRecommendation"
	ReasonUnhealthy               = "Unhealthy"
	ReasonStopping                = "Stopping"
	ReasonTerminating             = "Terminating"
	// ReasonCapacityReservationInterrupted is Dovetail's own reason.
	ReasonCapacityReservationInterrupted = "CapacityReservationInterrupted"
)

// eventFor returns the type, reason and message of a kind's event, and
// false for kinds without one.
func eventFor(kind Kind) (typ, reason, message string, ok bool) {
	switch kind {
	case KindSpotInterrupted:
		return corev1.EventTypeWarning, ReasonSpotInterrupted, "Spot interruption warning was triggered", true
	case KindRebalanceRecommendation:
		return corev1.EventTypeNormal, ReasonRebalanceRecommendation, "Rebalance recommendation was triggered", true
	case KindScheduledChange:
		return corev1.EventTypeWarning, ReasonUnhealthy, "An unhealthy warning was triggered", true
	case KindInstanceStopped:
		return corev1.EventTypeWarning, ReasonStopping, "Instance is stopping", true
	case KindInstanceTerminated:
		return corev1.EventTypeWarning, ReasonTerminating, "Instance is terminating", true
	case KindCapacityReservationInterrupted:
		return corev1.EventTypeWarning, ReasonCapacityReservationInterrupted, "Capacity reservation interruption warning was triggered", true
	}
	return "", "", "", false
}

// publish records the kind's event on each object (nil ones skipped),
// deduplicated per object and instance.
func (c *Controller) publish(kind Kind, instanceID string, objs ...client.Object) {
	typ, reason, message, ok := eventFor(kind)
	if !ok || c.opts.Recorder == nil {
		return
	}
	for _, obj := range objs {
		if obj == nil {
			continue
		}
		c.opts.Recorder.Publish(events.Event{InvolvedObject: obj, Type: typ, Reason: reason, Message: message,
			DedupeValues: []string{obj.GetName(), instanceID}})
	}
}
