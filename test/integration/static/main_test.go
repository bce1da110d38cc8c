// Package static_test runs static NodePools (spec.replicas, Karpenter v1.8)
// against a real kube-apiserver and etcd with the fake cloud provider,
// calling Reconcile directly on a fake clock: the nodepool.static
// controller creates exactly replicas NodeClaims with no pod around,
// deletes the surplus (empty nodes first) when scaled down, and stops at
// limits.nodes with an event; the disruption loop leaves an under-used
// static node alone while it removes an empty dynamic one; the provisioner
// places pending pods on a static pool's existing node but never launches
// from the pool. The cluster-state model is fed by the real informers; the
// tests play the lifecycle controller (launching and initializing claims).
package static_test

import (
	"os"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

var testEnv *env.Environment

func TestMain(m *testing.M) {
	os.Exit(env.Run(m, controlplane.ProfileAPIServer, &testEnv))
}
