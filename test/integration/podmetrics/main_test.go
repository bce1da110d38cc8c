// Package podmetrics_test checks, against a real kube-apiserver, that the
// pod metrics controller keeps exactly one karpenter_pods_state series per
// pod, labelled with its node's NodePool, zone and instance type and its
// phase, and drops it when the pod goes.
package podmetrics_test

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
