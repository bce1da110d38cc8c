package static

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// Event reasons. DisruptionTerminating, DisruptionBlocked and
// NoCompatibleInstanceTypes are Karpenter's; Karpenter publishes no event
// when limits.nodes caps a static pool (it logs "nodepool node limit
// reached"), nor when it scales one, so those two are Dovetail's.
const (
	// ReasonNodeLimitReached is published on the NodePool while limits.nodes
	// keeps it below its replicas.
	ReasonNodeLimitReached = "NodeLimitReached"
	// ReasonScaledUp is published on the NodePool when NodeClaims are
	// created to reach its replicas.
	ReasonScaledUp = "StaticNodePoolScaledUp"
	// ReasonTerminating is published on the Node and NodeClaim a scale-down
	// deletes.
	ReasonTerminating = "DisruptionTerminating"
	// ReasonBlocked is published on the NodePool when its budgets hold
	// part of a scale-down.
	ReasonBlocked = "DisruptionBlocked"
	// ReasonNoCompatibleInstanceTypes is published on the NodePool when no
	// instance type can be launched for it.
	ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
)

// repeatDedupe suppresses repeats of the pool's standing conditions
// (limited, held) with the same counts; the controller looks again every
// Recheck.
const repeatDedupe = 5 * time.Minute

func limitedEvent(np *v1.NodePool, d Decision) events.Event {
	return events.Event{
		InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: ReasonNodeLimitReached,
		Message:      fmt.Sprintf("Static NodePool kept at %d of its %d replicas by limits.nodes %d", d.Target, d.Replicas, d.Target),
		DedupeValues: []string{string(np.UID), fmt.Sprint(d.Replicas), fmt.Sprint(d.Target)}, DedupeTimeout: repeatDedupe,
	}
}

func scaledUpEvent(np *v1.NodePool, d Decision) events.Event {
	return events.Event{
		InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: ReasonScaledUp,
		Message:      fmt.Sprintf("Created %d NodeClaims to reach %d of %d replicas", d.Create, d.Current+d.Create, d.Replicas),
		DedupeValues: []string{string(np.UID), fmt.Sprint(d.Current), fmt.Sprint(d.Create)},
	}
}

func budgetHeldEvent(np *v1.NodePool, d Decision) events.Event {
	msg := fmt.Sprintf("Scale-down to %d replicas: disruption budgets hold %d of the %d surplus nodes for now",
		d.Replicas, d.Held, d.Current-d.Replicas)
	if d.BudgetErr != nil {
		msg += " (a budget cannot be evaluated and allows nothing: " + d.BudgetErr.Error() + ")"
	}
	return events.Event{
		InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: ReasonBlocked, Message: msg,
		DedupeValues: []string{string(np.UID), "static-scale-down", fmt.Sprint(d.Replicas), fmt.Sprint(d.Held)}, DedupeTimeout: repeatDedupe,
	}
}

func scaleDownEvents(m *machine.Machine, d Decision) []events.Event {
	msg := fmt.Sprintf("Disrupting NodeClaim: static NodePool %s scaled down to %d replicas", m.NodePoolName(), d.Replicas)
	objs := []runtime.Object{m.NodeClaim}
	if m.Node != nil {
		objs = append(objs, m.Node)
	}
	var out []events.Event
	for _, obj := range objs {
		out = append(out, events.Event{InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: ReasonTerminating, Message: msg,
			DedupeValues: []string{string(m.NodeClaim.UID), DisruptedReason}})
	}
	return out
}

func noInstanceTypesEvent(np *v1.NodePool, err error) events.Event {
	return events.Event{
		InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: ReasonNoCompatibleInstanceTypes,
		Message: "Static NodePool cannot launch: " + err.Error(), DedupeValues: []string{string(np.UID), err.Error()}, DedupeTimeout: repeatDedupe,
	}
}
