// Package drain decides what to do with the pods on a node that is being
// terminated: which pods the drain still waits for, which group of them to
// evict now, which to delete directly because the node's termination grace
// period is running out, and when the answer changes next.
//
// It is pure (pods, the current time and the termination deadline in; a Plan
// out) so that the ordering and deadline rules can be tested in
// microseconds without an API server. The node termination controller
// carries the plan out: it hands Plan.Evict to the eviction queue and deletes
// Plan.Delete itself.
//
// The rules follow Karpenter v1:
//   - mirror pods, pods tolerating karpenter.sh/disrupted:NoSchedule and pods
//     terminating for more than a minute past their deletion deadline are
//     not drained; terminal (Succeeded or Failed) pods are already gone;
//   - pods are drained in four groups, each only once the previous group is
//     gone: non-critical non-daemon, non-critical daemon, critical non-daemon,
//     critical daemon (critical = priority class system-cluster-critical or
//     system-node-critical);
//   - pods with an active karpenter.sh/do-not-disrupt annotation are waited
//     for but never evicted;
//   - when the node has a termination deadline, every remaining pod is
//     deleted at deadline - its terminationGracePeriodSeconds (at once if that
//     is past), with a grace period clamped to the time left (at least 1 s),
//     regardless of PDBs and do-not-disrupt.
package drain
