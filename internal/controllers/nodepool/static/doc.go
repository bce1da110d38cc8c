// Package static keeps each static NodePool (spec.replicas set, Karpenter
// v1.8's static capacity) at exactly its replicas, whatever the pods: it
// creates the missing NodeClaims, of the pool's cheapest launchable
// instance types, up to limits.nodes, and deletes the surplus when the
// pool is scaled down, claims not yet launched first, then empty nodes,
// then the least-used, within the pool's disruption budgets. Deleted
// claims go through the normal termination path, so drains respect
// PodDisruptionBudgets.
//
// Karpenter splits this into a provisioning and a deprovisioning
// controller; one controller owning the count reads more simply and cannot
// fight itself. The provisioner never launches from a static pool for
// pending pods (pods may still land on its nodes), disruption never
// consolidates its nodes, and drift replaces them one for one (see
// internal/disruption). Decide is pure and table-tested; the controller
// counts from the shared cluster-state model and waits until it is synced.
package static
