// Package termination holds the two finalizer controllers that take a node
// down safely once its NodeClaim or its Node is deleted, in Karpenter v1's
// order:
//
//   - NodeClaimController finalizes NodeClaims: it stamps the
//     karpenter.sh/nodeclaim-termination-timestamp annotation (deletion time
//     plus spec.terminationGracePeriod), deletes the claim's Node and waits for
//     it to go, then deletes the instance (until the provider reports it
//     gone) and removes the karpenter.sh/termination finalizer.
//   - NodeController finalizes Nodes: it deletes the Node's NodeClaim too,
//     taints the node karpenter.sh/disrupted:NoSchedule, drains it (the
//     policy is in the drain package, the evictions go through the eviction
//     package's queue), waits for its volumes to detach, deletes the
//     instance and removes the finalizer. It records progress on the
//     NodeClaim's Drained, VolumesDetached and InstanceTerminating
//     conditions.
//
// Deleting either object therefore ends the same way. Both controllers look
// objects up through the cache indexes that IndexFields registers; the
// composition root must call it once before the manager starts.
package termination
