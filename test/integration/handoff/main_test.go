// Package handoff_test checks, against a real kube-apiserver, that the
// hand-off controller keeps pods nominated to the Node Dovetail planned
// them onto while they wait, as the kube-scheduler clears the nomination.
package handoff_test

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
