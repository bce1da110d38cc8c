// Package autoscaling_test runs the whole Dovetail controller (kwok
// provider) on the full local control plane — real kube-apiserver, etcd,
// kube-scheduler and kube-controller-manager, kwok as the kubelet — and
// checks what a user sees: pending pods get nodes and run, constraints are
// honoured by the nodes launched, limits and unready NodeClasses stop
// launches, drains honour PDBs, and a controller restart leaks nothing.
package autoscaling_test

import (
	"os"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

var testEnv *env.Environment

func TestMain(m *testing.M) {
	os.Exit(env.Run(m, controlplane.ProfileFull, &testEnv))
}
