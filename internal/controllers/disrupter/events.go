package disrupter

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Event reasons. Karpenter's names where Karpenter has the event; the
// rollback and invalid-annotation reasons are Dovetail's.
// ConsolidationRejected is also the reason of a decision dropped after
// validation.
const (
	ReasonDisruptionBlocked          = disruption.ReasonDisruptionBlocked
	ReasonUnconsolidatable           = disruption.ReasonUnconsolidatable
	ReasonDisruptionLaunching        = "DisruptionLaunching"
	ReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	ReasonDisruptionTerminating      = "DisruptionTerminating"
	ReasonConsolidationRejected      = disruption.ReasonConsolidationRejected
	ReasonConsolidationApproved      = disruption.ReasonConsolidationApproved
	ReasonDisruptionRolledBack       = "DisruptionRolledBack"
	ReasonInvalidDoNotDisrupt        = "InvalidDoNotDisruptAnnotation"
)

// Repeats of skip events are suppressed for a while: a decision is taken
// every 10 s and would otherwise repeat them.
const (
	blockedDedupe          = 5 * time.Minute
	unconsolidatableDedupe = 15 * time.Minute
)

func blockedEvent(obj runtime.Object, name, reason, message string) events.Event {
	timeout := blockedDedupe
	if reason == ReasonUnconsolidatable {
		timeout = unconsolidatableDedupe
	}
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: reason, Message: message,
		DedupeValues: []string{name, message}, DedupeTimeout: timeout,
	}
}

func budgetBlockedEvent(np *v1.NodePool, reason v1.DisruptionReason) events.Event {
	return events.Event{
		InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: ReasonDisruptionBlocked,
		Message:      disruption.BudgetBlockedMessage(reason),
		DedupeValues: []string{np.Name, string(reason)}, DedupeTimeout: blockedDedupe,
	}
}

// heldEvent tells a node (or its NodeClaim) that a budget holds it back:
// which budget, and when its disruption window opens. Repeats are
// suppressed while the message stays the same.
func heldEvent(obj runtime.Object, name string, h disruption.Held) events.Event {
	message := h.Message()
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: ReasonDisruptionBlocked, Message: message,
		DedupeValues: []string{name, message}, DedupeTimeout: blockedDedupe,
	}
}

// scoreEvent carries a Balanced consolidation verdict and its score. A
// rejection is repeated at most every 15 minutes per object and score, as
// Unconsolidatable is.
func scoreEvent(obj runtime.Object, name string, s disruption.MoveScore) events.Event {
	timeout := blockedDedupe
	if !s.Approved {
		timeout = unconsolidatableDedupe
	}
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: s.Reason(), Message: s.Message(),
		DedupeValues: []string{name, fmt.Sprintf("%.2f", s.Score), s.Command.String()}, DedupeTimeout: timeout,
	}
}

func invalidBudgetEvent(np *v1.NodePool, reason v1.DisruptionReason, err error) events.Event {
	return events.Event{
		InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: ReasonDisruptionBlocked,
		Message:      fmt.Sprintf("Disrupting no node for reason %s: a disruption budget cannot be evaluated: %v", reason, err),
		DedupeValues: []string{np.Name, string(reason), err.Error()}, DedupeTimeout: blockedDedupe,
	}
}

func invalidAnnotationEvent(pod *corev1.Pod) events.Event {
	value := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	return events.Event{
		InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: ReasonInvalidDoNotDisrupt,
		Message: fmt.Sprintf("Annotation %s=%q is neither \"true\" nor a duration; it does not protect the pod",
			v1.DoNotDisruptAnnotationKey, value),
		DedupeValues: []string{string(pod.UID), value}, DedupeTimeout: blockedDedupe,
	}
}

func launchingEvent(obj runtime.Object, name string, cmd *command) events.Event {
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: ReasonDisruptionLaunching,
		Message:      fmt.Sprintf("Launching NodeClaim %s to replace this node; %s", strings.Join(cmd.replacements, ", "), cmd.explanation),
		DedupeValues: []string{name, cmd.id},
	}
}

func waitingEvent(obj runtime.Object, name string, cmd *command) events.Event {
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: ReasonDisruptionWaitingReadiness,
		Message:      fmt.Sprintf("Waiting on readiness of NodeClaim %s to continue disruption", strings.Join(cmd.replacements, ", ")),
		DedupeValues: []string{name, cmd.id},
	}
}

// terminatingEvent says why a node is deleted; for a repair, also that its
// replacements were not waited for, if so, and that its pods do not wait
// on evictions.
func terminatingEvent(obj runtime.Object, name string, cmd *command) events.Event {
	msg := "Disrupting node: " + cmd.explanation
	if cmd.forced {
		if cmd.forcedWhy != "" {
			msg += " (not waiting for the replacements: " + cmd.forcedWhy + ")"
		}
		msg += "; its pods are deleted without waiting for evictions"
	}
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: ReasonDisruptionTerminating,
		Message: msg, DedupeValues: []string{name, cmd.id},
	}
}

func rejectedEvent(obj runtime.Object, name string, err error) events.Event {
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: ReasonConsolidationRejected,
		Message: "Dropped a disruption decision after validation: " + err.Error(), DedupeValues: []string{name, err.Error()},
	}
}

func rolledBackEvent(obj runtime.Object, name string, cmd *command, why string) events.Event {
	return events.Event{
		InvolvedObject: obj, Type: corev1.EventTypeWarning, Reason: ReasonDisruptionRolledBack,
		Message: "Rolled back disruption (" + cmd.explanation + "): " + why, DedupeValues: []string{name, cmd.id},
	}
}
