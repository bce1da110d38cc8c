// Package disruption_test runs the disruption controllers against a real
// kube-apiserver and etcd, calling their Reconcile methods directly with a
// fake clock: expiration, the Drifted and Consolidatable conditions, the
// pod-event stamps, and the disruption loop with its queue (taint, launch
// replacements, wait for them, delete; rollback on timeout; validation;
// budgets that cannot be evaluated; NodePools deleted mid-disruption;
// restarts). The cluster-state model is fed by the real informers. Nothing
// else runs: the tests play the lifecycle controller (launching and
// initializing replacements) themselves.
package disruption_test

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
