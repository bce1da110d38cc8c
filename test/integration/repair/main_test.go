// Package repair_test runs node repair against a real kube-apiserver and
// etcd with the kwok cloud provider, wired as the composition root wires
// it: the node.health controller asks, the disruption loop and queue
// replace. kwok nodes are marked NotReady, and the test calls Reconcile
// itself on a fake clock. A node is left alone during its toleration; then
// its repair is requested, and the disruption loop launches the
// replacement its pods need, waits until it is initialized and only then
// deletes the NodeClaim (with the termination deadline set to now, the
// DisruptionTerminating event and Karpenter's metrics); a replacement
// that is late does not stop the repair; an empty node is deleted at once;
// with more than 20% of a NodePool's nodes unhealthy nothing is requested
// and NodeRepairBlocked is recorded.
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
