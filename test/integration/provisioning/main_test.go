// Package provisioning_test runs the provisioner against a real apiserver:
// pending pods become NodeClaims with the right shape, limits and unready
// NodePools stop launches, and pods no NodePool can serve launch nothing.
package provisioning_test

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
