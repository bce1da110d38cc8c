package state

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// Snapshot builds the simulator's input from the model, under one read lock:
// every machine (existing nodes and in-flight NodeClaims, with their bound
// pods) and the daemonsets, plus the given pending pods and NodePools.
//
// An in-flight claim that has not been launched counts against its pool's
// limits with the largest capacity among its instance-type options (the
// provider may launch any of them), as Karpenter does.
func (c *Cluster) Snapshot(pods []*corev1.Pod, pools []simulator.NodePool) *simulator.Snapshot {
	return machine.NewSnapshot(c.Nodes(), c.DaemonSets(), pods, pools)
}
