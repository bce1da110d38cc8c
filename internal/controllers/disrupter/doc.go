// Package disrupter removes nodes that are empty, under-used or drifted,
// inside the NodePools' disruption budgets, with no pod left homeless, and
// carries out node repair: it replaces the unhealthy nodes the node.health
// controller asks it to (health.Requests), replacement first.
//
// Controller is a singleton loop (leader only). Each pass it waits for the
// cluster-state model to be synced, rolls back disruption left half-done
// (taints and DisruptionReason conditions of nodes no command owns, for
// example after a restart), gathers a view of the cluster (state nodes,
// NodePools with instance types, PDBs, pending pods) and asks the pure
// package internal/disruption for a decision. It publishes an event for
// every node it skipped and why, and Karpenter's disruption metrics. A
// consolidation or emptiness command waits the validation delay (15 s by
// default) and is re-simulated on a fresh view before it is carried out; a
// drift command is carried out at once. With no command, the loop polls
// every 10 s; consolidation is skipped while nothing it depends on has
// changed (re-checked every 5 minutes regardless).
//
// Queue carries commands out: it taints the candidates
// karpenter.sh/disrupted:NoSchedule and records the DisruptionReason
// condition, creates the replacement NodeClaims (annotated with the claims
// they replace, so that a restarted controller re-derives the command),
// marks the candidates for deletion in the model once the replacements are
// in it (so that provisioning counts them and launches no duplicates),
// waits until every replacement is initialized, then deletes the
// candidates; termination drains them. If a replacement fails, is deleted,
// is not initialized within the replacement timeout, or the NodePool goes
// away, the command is rolled back: taints and conditions removed,
// replacements deleted, marks undone.
//
// Repair commands (method repair, reason Unhealthy) come first in every
// pass, ignore do-not-disrupt, PDBs and budgets, are started at once (also
// while another command waits for validation; a new request wakes the
// loop) and are forced: where another command would roll back (a
// replacement that failed to launch, was deleted or is late, a NodePool
// going away) a repair deletes its candidate anyway, replacements kept.
// Before deleting, the queue sets the claim's
// karpenter.sh/nodeclaim-termination-timestamp to now (the drain then does
// not wait on evictions a dead kubelet cannot carry out), and counts the
// repair in karpenter_nodeclaims_disrupted_total{reason="unhealthy"} and
// karpenter_nodeclaims_unhealthy_disrupted_total once per NodeClaim. A
// restarted queue resumes a repair forced.
package disrupter
