// Package state is Dovetail's single in-memory model of the cluster: Nodes,
// NodeClaims (including in-flight ones that have no Node yet), the pods bound
// to each, and daemonsets, as the informers deliver them; and, kept apart
// in one place of its own (intents, intent.go), what provisioning and
// disruption intend that the API server does not show yet: the pods each
// pass planned onto a machine and which are handed to the kube-scheduler,
// nominations, and the machines being removed.
//
// Only the thin informer reconcilers in package informer write the objects;
// provisioning and disruption write their intents through the Cluster's
// methods; every other controller reads. Decisions are taken on a
// consistent Snapshot built under a read lock, and never while the model is
// not Synced with the API server, so that Dovetail does not launch for pods
// it has not seen land or remove nodes it does not know are busy.
package state
