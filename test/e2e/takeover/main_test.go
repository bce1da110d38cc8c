// Package takeover_test takes over, end to end, a cluster that Karpenter
// v1.14 (kwok provider) ran: NodePools, NodeClaims and Nodes are created
// exactly as Karpenter leaves them, then the Dovetail controller starts on
// the full local control plane (real kube-apiserver, etcd, kube-scheduler,
// kube-controller-manager, kwok as the kubelet). Nothing may be drifted,
// relaunched or deleted because Dovetail took over; consolidation and
// expiration then resume with Karpenter's semantics, and new pods use the
// existing capacity first. It also launches a node of Karpenter kwok's
// instance types from a NodePool written for that provider.
package takeover_test

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
