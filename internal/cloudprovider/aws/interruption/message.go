package interruption

import "time"

// Kind is what an interruption message asks Dovetail to do something about.
// The values are Karpenter's message kinds, used as the message_type label of
// karpenter_interruption_received_messages_total and as the reason label of
// karpenter_nodeclaims_disrupted_total.
type Kind string

// The message kinds.
const (
	// KindNoOp is a well-formed message Dovetail ignores: an unknown
	// (version, source, detail-type), an instance state other than
	// stopping/stopped/shutting-down/terminated, or an AWS Health event that
	// is not an EC2 scheduled change.
	KindNoOp Kind = "no_op"
	// KindSpotInterrupted is an EC2 Spot Instance Interruption Warning.
	KindSpotInterrupted Kind = "spot_interrupted"
	// KindRebalanceRecommendation is an EC2 Instance Rebalance Recommendation.
	KindRebalanceRecommendation Kind = "rebalance_recommendation"
	// KindScheduledChange is an AWS Health scheduled change for EC2.
	KindScheduledChange Kind = "scheduled_change"
	// KindInstanceStopped is a state change to stopping or stopped.
	KindInstanceStopped Kind = "instance_stopped"
	// KindInstanceTerminated is a state change to shutting-down or terminated.
	KindInstanceTerminated Kind = "instance_terminated"
	// KindCapacityReservationInterrupted is an EC2 Capacity Reservation
	// Instance Interruption Warning.
	KindCapacityReservationInterrupted Kind = "capacity_reservation_interrupted"
)

// Disrupts reports whether messages of the kind delete the instances'
// NodeClaims (Karpenter's CordonAndDrain action). Rebalance recommendations
// and no-ops only publish events, if anything.
func (k Kind) Disrupts() bool {
	switch k {
	case KindSpotInterrupted, KindScheduledChange, KindInstanceStopped, KindInstanceTerminated, KindCapacityReservationInterrupted:
		return true
	}
	return false
}

// Message is a parsed interruption message.
type Message struct {
	// Kind is what the message is about.
	Kind Kind
	// ID is the EventBridge event ID.
	ID string
	// Source and DetailType are the envelope's source and detail-type.
	Source, DetailType string
	// InstanceIDs are the affected instances; empty only for KindNoOp.
	InstanceIDs []string
	// Time is the envelope's time: when the event happened (zero if absent).
	Time time.Time
	// StartTime is when the disruption starts: the AWS Health event's
	// startTime for a scheduled change (the envelope's time when it is
	// absent or unreadable), the envelope's time otherwise.
	StartTime time.Time
	// Action is the detail's instance-action (spot and capacity reservation
	// warnings) or state (state changes); informational.
	Action string
}
