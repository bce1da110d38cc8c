// Package demo tells Dovetail's story on a local control plane, for a new
// user to watch in the terminal in under two minutes: three workloads of
// different shapes arrive on an empty cluster, Dovetail launches the
// cheapest simulated EC2 nodes that fit them (showing type, zone, capacity
// type and $/h), every pod runs, then a node is deleted and drained without
// breaking its PodDisruptionBudget, and a summary closes. The demo checks
// what it shows: if a step does not happen, it fails with an error.
package demo
