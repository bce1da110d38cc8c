// Package repair_test runs node repair (the node.health controller) against
// a real kube-apiserver and etcd with the kwok cloud provider: kwok nodes are
// marked NotReady, and the test calls Reconcile itself on a fake clock. A
// node is left alone during its toleration, its NodeClaim is deleted once
// the toleration has passed (with the termination deadline set to now, the
// DisruptionTerminating event and Karpenter's metrics), and the termination
// finalizers then take the node away; with more than 20% of a NodePool's
// nodes unhealthy nothing is deleted and NodeRepairBlocked is recorded.
package repair_test

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
