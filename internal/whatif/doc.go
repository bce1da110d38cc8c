// Package whatif answers "what would Dovetail do if…?" and "why did it do
// that?" without touching a cluster: the library behind `dovetail snapshot`,
// `dovetail simulate` and `dovetail explain`.
//
// A cluster is an Objects value: the Nodes, NodeClaims, NodePools,
// NodeClasses, pods, DaemonSets, PodDisruptionBudgets, volumes and
// Namespaces the decisions need, read from an API server (FromCluster) or
// from a multi-document YAML snapshot (Load, which reports bad input with
// the file, line and field). Changes (manifests and flags) are applied to a
// copy, and Simulate runs the very code the controllers run on it: the
// cluster-state model (package state) builds the scheduling simulator's
// snapshot as provisioning does, simulator.Simulate places the pending pods,
// and disruption.Decide takes the disruption decision the disruption
// controller would take now. Explain uses the same functions to say why a
// pod is pending, why a node has its instance type or is not consolidated,
// and what a NodePool's budgets allow.
//
// Instance types come from the embedded EC2 catalog (the kwok provider's
// default set) whatever the NodeClass kind, so prices are EC2 on-demand list
// prices and derived spot prices, and the AWS provider's own filtering
// (subnets, AMIs, capacity reservations) is not modelled. The cluster's
// NodeOverlays are applied to them per NodePool with the overlay package's
// own Parse, Evaluate and Apply, skipping the overlays the decorator skips
// (see OverlayInstanceTypes), so that prices and extended resources are the
// ones the controllers plan with.
package whatif
