package health

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Event reasons, as Karpenter names them.
const (
	// ReasonTerminating is published on the Node and NodeClaim a repair
	// deletes; the disruption controller, which carries repairs out,
	// publishes it.
	ReasonTerminating = "DisruptionTerminating"
	// ReasonBlocked is published on the Node, NodeClaim and NodePool when the
	// safeguard holds a repair back.
	ReasonBlocked = "NodeRepairBlocked"
)

// blockedDedupe suppresses repeats of a NodeRepairBlocked event with the
// same counts; the controller looks again every BlockedRecheck.
const blockedDedupe = 5 * time.Minute

func conditionText(d Decision) string {
	return fmt.Sprintf("%s=%s since %s", d.Condition.Type, d.Condition.Status, d.Condition.LastTransitionTime.UTC().Format(time.RFC3339))
}

// blockedMessage names the count the safeguard refused.
func blockedMessage(poolName string, d Decision) string {
	scope := "the cluster's nodes (the NodeClaim has no NodePool)"
	if poolName != "" {
		scope = "the nodes of NodePool " + poolName
	}
	return fmt.Sprintf("Node repair blocked: %d of %d of %s are unhealthy, more than %d%% (at most %d may be)",
		d.Unhealthy, d.Total, scope, AllowedUnhealthyPercent, d.Allowed)
}

func blockedEvents(node *corev1.Node, nodeClaim *v1.NodeClaim, nodePool *v1.NodePool, poolName string, d Decision) []events.Event {
	msg := blockedMessage(poolName, d)
	nodeMsg := msg + "; " + conditionText(d)
	out := []events.Event{
		{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: ReasonBlocked, Message: nodeMsg, DedupeTimeout: blockedDedupe},
		{InvolvedObject: nodeClaim, Type: corev1.EventTypeWarning, Reason: ReasonBlocked, Message: nodeMsg, DedupeTimeout: blockedDedupe},
	}
	if nodePool != nil {
		out = append(out, events.Event{InvolvedObject: nodePool, Type: corev1.EventTypeWarning, Reason: ReasonBlocked, Message: msg, DedupeTimeout: blockedDedupe})
	}
	return out
}
