// Package lifecycle_test drives NodeClaims through launch, registration,
// initialization and liveness against a real apiserver, calling the
// controller's Reconcile directly with a fake clock.
package lifecycle_test

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
