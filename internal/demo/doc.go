// Package demo tells Dovetail's story on a local control plane, for a new
// user to watch in the terminal in about two minutes: three workloads of
// different shapes arrive on an empty cluster, Dovetail launches the
// cheapest simulated EC2 nodes that fit them (showing type, zone, capacity
// type and $/h), every pod runs, then a node is deleted and drained without
// breaking its PodDisruptionBudget, then the load drops and consolidation
// removes and replaces nodes until the cluster is cheaper (again without
// breaking the PodDisruptionBudget), and a summary closes. The demo checks
// what it shows: if a step does not happen, it fails with an error.
package demo
