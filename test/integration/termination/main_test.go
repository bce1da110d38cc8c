// Package termination_test runs the termination controllers against a real
// kube-apiserver and etcd, calling Reconcile directly with a fake clock.
// Nothing else runs there: the tests play the kubelet (finishing terminating
// pods, marking pods Ready) and the disruption controller (writing PDB
// status) themselves.
package termination_test

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
