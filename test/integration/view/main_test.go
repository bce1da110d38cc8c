// Package view_test runs `dovetail view --once` against a real
// kube-apiserver and etcd: NodePools, NodeClaims, Nodes and pods are
// created through the API, read by the view's informers, and the printed
// screen is checked; bad kubeconfigs and flags fail with a clear error.
package view_test

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
