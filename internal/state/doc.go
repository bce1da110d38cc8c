// Package state is Dovetail's single in-memory model of the cluster: Nodes,
// NodeClaims (including in-flight ones that have no Node yet), the pods bound
// to each, daemonsets, nominations and nodes marked for deletion.
//
// Only the thin informer reconcilers in package informer write to it; every
// other controller reads it. Decisions are taken on a consistent Snapshot
// built under a read lock, and never while the model is not Synced with the
// API server, so that Dovetail does not launch for pods it has not seen land
// or remove nodes it does not know are busy.
package state
