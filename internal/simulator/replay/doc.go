// Package replay turns a simulator Plan into the binding problem the
// kube-scheduler would face: every existing node and every NodeClaim the plan
// creates, materialised as a Node of the instance type, zone and capacity
// type it would launch as, and the plan's pods in the order to bind them,
// each with the node the plan chose for it.
//
// It exists so that a plan can be checked by code that shares nothing with
// the simulator: the independent checks in the simulator's tests and the
// kube-scheduler oracle in test/oracle (a module of its own, so that this
// module never imports k8s.io/kubernetes). A Problem is plain API objects,
// so it can also be written to disk as JSON and replayed elsewhere.
package replay
