// Package eviction evicts pods through the policy/v1 Eviction API, the only
// way to remove a pod that honours its PodDisruptionBudgets. Evictions run
// from a work queue with their own goroutines, so that a node termination
// reconcile only enqueues pods and never blocks on a PDB.
//
// Each pod is retried with exponential backoff (100 ms doubling to 10 s)
// while the API server refuses the eviction: 429 means a PDB allows no
// disruption now, and 500 with the "more than one PodDisruptionBudget"
// message means the pod is covered by several PDBs, which the API does not
// support; both publish a FailedDraining event on the node and retry. 404
// (pod gone) and 409 (same name, different pod) end the attempt. An
// eviction is made with the pod's UID as a precondition so that a
// replacement with the same name is never evicted by mistake.
//
// The Queue is a manager.Runnable: Register adds it to the manager, which
// starts its workers after leader election and stops them on shutdown.
package eviction
