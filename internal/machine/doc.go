// Package machine is one machine of the cluster as Dovetail models it (its
// Node, its NodeClaim, or both once the claim's instance registered, with
// the pods bound to it) and the scheduling simulator's snapshot built from
// machines. The cluster-state model (internal/state) hands machines out;
// the pure disruption decisions (internal/disruption) take them as input
// without depending on the model, which is why they live here, below both.
package machine
