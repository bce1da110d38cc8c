// Package kwok_test checks the kwok cloud provider against a real
// kube-apiserver: launching, finding and deleting Nodes, the choice of
// offering for real NodePool requirements, the restart-safe registration
// delay, NodeClass readiness and injected insufficient capacity. Time is a
// fake clock throughout; nothing sleeps.
package kwok_test

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
