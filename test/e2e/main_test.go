// Package e2e_test runs Dovetail end to end on the full local control plane:
// real kube-apiserver, etcd, kube-scheduler and kube-controller-manager, with
// kwok playing the kubelet of simulated nodes.
package e2e_test

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
