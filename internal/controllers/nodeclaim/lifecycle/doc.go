// Package lifecycle takes a NodeClaim from request to ready node: it adds the
// termination finalizer when the claim lacks it, confirms with the API
// server that the claim is still wanted, launches the instance through the
// cloud provider (Launched), matches the Node that joins with its provider
// ID and hands it the claim's labels, taints and finalizer (Registered),
// waits until the node is Ready with its startup taints and the known
// ephemeral taints (not-ready, unreachable, ...) gone and requested
// resources present (Initialized), and deletes claims whose instance never
// launched or never registered (Liveness). Ready is the root condition of
// the three.
package lifecycle
