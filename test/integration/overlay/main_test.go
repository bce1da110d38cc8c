// Package overlay_test runs NodeOverlays against a real API server: the CRD
// rejects bad overlays naming the field, a discounted instance family wins
// the provisioning decision and the launch, an overlay's extended resource
// lets a pod that requests it get a NodeClaim and a Node that advertises
// it, and same-weight overlays that change the same price are reported as
// a conflict and resolved the same way everywhere.
package overlay_test

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
