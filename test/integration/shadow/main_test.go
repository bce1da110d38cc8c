// Package shadow_test runs Dovetail's shadow mode against a real
// kube-apiserver and etcd: a controller composed with --dry-run (the
// controllers it would run in a cluster, on a manager, with a fake cloud
// provider; and the whole operator with the kwok provider) beside pending
// pods and an under-used node launches, taints
// and deletes nothing and writes no NodeClaim, Node, NodePool or pod, yet
// publishes its provisioning and disruption decisions as events and
// dovetail_shadow_* metrics; a NodePool annotated dovetail.dev/shadow in a
// live controller is decided on and published, never acted on, while a
// live NodePool beside it is; and `dovetail simulate --against-live`
// compares the cluster's nodes with a fresh plan.
package shadow_test

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
