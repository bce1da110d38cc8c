// Package disruption decides which nodes to take away and how: the pure
// half of Dovetail's disruption controller. Given the machines of the
// cluster-state model, the NodePools with their instance types, the
// PodDisruptionBudgets, the pending pods and a point in time, Decide returns
// at most one command (the nodes to disrupt, the reason, and the
// replacement NodeClaims to launch first) together with everything it
// skipped and why, so that the controller can explain each skip with an
// event. Validate re-checks a command on a later view of the cluster.
//
// The methods run in Karpenter v1's order, after repair, and the first
// that yields a command wins: repair (replace the unhealthy nodes the
// node.health controller asks for, Input.Repairs, replacement first and
// forced; none of the guards or budgets below applies to it), emptiness
// (delete empty nodes), drift (replace drifted nodes, replacement first),
// multi-node consolidation (the largest prefix of the ordered candidates
// whose pods fit on the rest of the cluster plus at most one strictly
// cheaper node; with Options.MultiNodeReplacements, or several nodes, fewer
// than the prefix, strictly cheaper together and scoring at least 1/k by
// the Balanced formula) and single-node
// consolidation.
// Other candidates pass the same guards for every method (initialized, not being
// deleted, not nominated, no karpenter.sh/do-not-disrupt pod or node, no
// PDB that forbids an eviction) and are ordered by savings per unit of
// disruption cost. Every command stays within the NodePools' disruption
// budgets; a candidate a budget turns away is reported (Outcome.Held) with
// the binding budget and the time the budgets' schedules let it go.
//
// A NodePool with consolidationPolicy Balanced (Karpenter v1.14) has each
// consolidation move scored: the share of the pool's cost it saves over the
// share of the pool's disruption cost it causes; the move is made only when
// the score is at least 1/k, k being the pool's consolidationThreshold
// (Dovetail's extension; 2, Karpenter's fixed value, by default). Every
// verdict is reported (Outcome.Scores).
//
// The package does no I/O and keeps no state: time comes in the Input, and
// one scheduling-simulator model is built per decision pass and shared by
// every what-if simulation of that pass. See docs/design/disruption.md.
package disruption
