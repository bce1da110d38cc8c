// Package disruptionstatus keeps the NodeClaim status that disruption decisions
// and users read:
//
//   - Controller sets the Drifted condition (reason NodePoolDrifted when the
//     NodePool's template hash changed, RequirementsDrifted when the claim's
//     labels no longer satisfy the NodePool's requirements, and the cloud
//     provider's own reason, such as AMIDrift or SubnetDrift, when it says
//     the instance no longer matches its NodeClass) and clears it when the drift is
//     gone; and it sets Consolidatable once consolidateAfter has passed
//     since the claim's last pod event (or its initialization).
//   - PodEventsController stamps status.lastPodEventTime when a pod that is
//     not a daemonset pod is bound to the claim's node or leaves it (it
//     finishes, starts terminating or is deleted), at most every 10 s per
//     claim; a later event inside that window is written when it ends, so
//     consolidateAfter never starts earlier than the last event.
//
// The drift and consolidation rules live in internal/disruption, so that
// the conditions here and the decisions there agree.
package disruptionstatus
