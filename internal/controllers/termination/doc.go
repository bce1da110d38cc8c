// Package termination holds the two finalizer controllers that take a node
// down safely once its NodeClaim or its Node is deleted, in Karpenter v1's
// order:
//
//   - NodeClaimController finalizes NodeClaims: it stamps the
//     karpenter.sh/nodeclaim-termination-timestamp annotation (deletion time
//     plus spec.terminationGracePeriod), deletes the claim's Node and waits
//     for it to go, then deletes the instance (until the provider reports it
//     gone) and removes the karpenter.sh/termination finalizer.
//   - NodeController finalizes Nodes: it deletes the Node's NodeClaim too,
//     taints the node karpenter.sh/disrupted:NoSchedule, drains it, waits
//     for its volumes to detach, deletes the instance and removes the
//     finalizer. It records progress on the NodeClaim's Drained,
//     VolumesDetached and InstanceTerminating conditions.
//
// Deleting either object therefore ends the same way.
//
// Two subpackages do the parts that deserve their own tests: drain is the
// pure drain policy (which pods to wait for, evict or delete, in which
// order, by when), and eviction is the background queue that calls the
// Eviction API so that PDBs are honoured. The controllers only read through
// the cache indexes that internal/indexes registers. A composition root wires
// them once:
//
//	if err := indexes.Setup(ctx, mgr.GetFieldIndexer()); err != nil { ... }
//	queue := eviction.NewQueue(clk, mgr.GetClient(), recorder, m)
//	nodes := termination.NewNodeController(clk, mgr.GetClient(), provider, recorder, m, queue)
//	claims := termination.NewNodeClaimController(clk, mgr.GetClient(), provider, recorder, m)
//	// then queue.Register(ctx, mgr), nodes.Register(ctx, mgr), claims.Register(ctx, mgr)
package termination
