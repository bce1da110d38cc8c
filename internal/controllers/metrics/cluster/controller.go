// Package cluster exports the cluster-state metrics: how many machines the
// model holds, whether it is synced with the API server, and per node what
// it offers and what its pods ask for (karpenter_nodes_allocatable,
// _total_pod_requests, _total_daemon_requests, ...), which Karpenter's
// capacity dashboard reads.
package cluster

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// Controller samples the model every few seconds.
type Controller struct {
	clock      clock.Clock
	kubeClient client.Client
	cluster    *state.Cluster
	metrics    *metrics.Metrics
	period     time.Duration
}

// NewController returns the cluster-state metrics loop.
func NewController(clk clock.Clock, kubeClient client.Client, cluster *state.Cluster, m *metrics.Metrics) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cluster: cluster, metrics: m, period: 5 * time.Second}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "metrics.cluster" }

// Register adds the loop to the manager; every replica exports it.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error { return mgr.Add(c) }

// NeedLeaderElection lets every replica export the metrics.
func (c *Controller) NeedLeaderElection() bool { return false }

// Start samples until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(c.period):
		}
		nodes := c.cluster.Nodes()
		c.metrics.ClusterStateNodeCount.Set(float64(len(nodes)))
		c.metrics.Nodes.Set(nodeSamples(nodes))
		synced, err := c.cluster.Synced(ctx, c.kubeClient)
		if err != nil {
			log.FromContext(ctx).V(1).Info("Checking cluster state sync", "error", err.Error())
		}
		if synced {
			c.metrics.ClusterStateSynced.Set(1)
		} else {
			c.metrics.ClusterStateSynced.Set(0)
		}
	}
}
