// Package health repairs unhealthy nodes, as Karpenter's node.health
// controller does (feature gate NodeRepair, on by default in Dovetail),
// but replacement first.
//
// The cloud provider's RepairPolicies name node conditions (type and
// status) and how long each is tolerated. When a managed Node has carried
// such a condition for its toleration, measured from the condition's
// lastTransitionTime, the controller asks for the node's repair: it records
// a Request in Requests, the set it shares with the disruption controller
// (internal/controllers/disrupter), and wakes it. The disruption
// controller replaces the node as it replaces a drifted one: it launches
// the NodeClaims the node's pods need, waits until they are initialized,
// then stamps the NodeClaim's karpenter.sh/nodeclaim-termination-timestamp
// with the current time (AnnotateTerminationTime), so that the drain does
// not wait on PDBs or grace periods for pods whose kubelet is gone, and
// deletes the NodeClaim. The repair is forced: it ignores do-not-disrupt,
// PDBs and disruption budgets, and deletes the node anyway when no
// replacement can be planned or launched, or none is initialized within
// the replacement timeout. A node that recovers, or goes, before its
// repair starts has its request dropped; the set is in memory and rebuilt
// after a restart, the controller reconciling every Node when it starts.
//
// A safeguard keeps a cluster-wide fault (a network partition, a control
// plane outage) from replacing every node at once: no node of a NodePool is
// repaired while more of its nodes are unhealthy than 20% of them, rounded
// up (1 of 5 may be repaired; 2 of 5 block); nodes without a NodePool are
// judged against every node of the cluster. A blocked repair is published
// as a NodeRepairBlocked warning on the Node, NodeClaim and NodePool, and
// retried every minute; a requested one is looked at again every minute
// too, so that a repair the safeguard blocks meanwhile is withdrawn.
//
// Decide is the pure decision; Controller gathers its input, records the
// requests and publishes NodeRepairBlocked. The disruption controller
// publishes the repair's events (DisruptionLaunching,
// DisruptionWaitingReadiness, DisruptionTerminating) and metrics
// (karpenter_nodeclaims_disrupted_total{reason="unhealthy"},
// karpenter_nodeclaims_unhealthy_disrupted_total). Time comes from an
// injected clock: a node is requeued for the instant its toleration ends.
package health
