// Package fidelity_test checks, on the full local control plane (real
// kube-apiserver, etcd, kube-scheduler and kube-controller-manager, kwok as
// the kubelet), that the plan Dovetail's provisioner makes is the placement
// the kube-scheduler carries out: each pod binds to the node Dovetail
// launched it for and nominated it to (status.nominatedNodeName, KEP-5278),
// no pod stays pending, and no NodeClaim is launched beyond the plan or left
// empty.
package fidelity_test

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
