// Package health repairs unhealthy nodes, as Karpenter's node.health
// controller does (feature gate NodeRepair, on by default in Dovetail).
//
// The cloud provider's RepairPolicies name node conditions (type and
// status) and how long each is tolerated. When a managed Node has carried
// such a condition for its toleration, measured from the condition's
// lastTransitionTime, the controller replaces the node: it stamps the
// NodeClaim's karpenter.sh/nodeclaim-termination-timestamp with the current
// time, so that the drain does not wait on PDBs or grace periods for pods
// whose kubelet is gone, and deletes the NodeClaim. Termination then takes
// the node down, and the provisioner, which counts the pods of deleting
// nodes as needing a home, launches their replacement capacity.
//
// A safeguard keeps a cluster-wide fault (a network partition, a control
// plane outage) from replacing every node at once: no node of a NodePool is
// repaired while more of its nodes are unhealthy than 20% of them, rounded
// up (1 of 5 may be repaired; 2 of 5 block); nodes without a NodePool are
// judged against every node of the cluster. A blocked repair is published
// as a NodeRepairBlocked warning on the Node, NodeClaim and NodePool, and
// retried every minute.
//
// Decide is the pure decision; Controller gathers its input, carries it
// out, and publishes events (DisruptionTerminating, NodeRepairBlocked) and
// metrics (karpenter_nodeclaims_disrupted_total{reason="unhealthy"},
// karpenter_nodeclaims_unhealthy_disrupted_total). Time comes from an
// injected clock: a node is requeued for the instant its toleration ends.
package health
