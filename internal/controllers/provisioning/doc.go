// Package provisioning launches nodes for pods the kube-scheduler cannot
// place. Unschedulable pods (and pods on nodes being deleted) trigger a batch;
// when the batch window closes, the provisioner takes a snapshot of the
// cluster-state model, asks the scheduling simulator where the pods fit, and
// creates the NodeClaims the plan calls for. Pods no NodePool can serve get
// an event with the simulator's reason and launch nothing.
package provisioning
