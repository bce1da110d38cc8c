// Package oracle checks the simulator's plans against the kube-scheduler's
// own code: it binds each planned pod to its planned node through the
// upstream scheduler framework's PreFilter and Filter plugins, in the plan's
// order, and reports every pod the scheduler would refuse there.
//
// It is a module of its own so that the main module never imports
// k8s.io/kubernetes; it reads the main module's simulator through a replace
// directive.
package oracle
