// Package controllers is the composition root of Dovetail's controllers:
// NewControllers builds every controller with explicit dependencies (the
// shared cluster-state model, the cloud provider, the clock, the event
// recorder and metrics), so the whole dependency graph reads in one place.
// It never imports a concrete cloud provider; the caller passes one in.
package controllers

import (
	"context"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	clustermetrics "github.com/dovetail-autoscaler/dovetail/internal/controllers/metrics/cluster"
	podmetrics "github.com/dovetail-autoscaler/dovetail/internal/controllers/metrics/pod"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/disruptionstatus"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/expiration"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/hash"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/readiness"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/status"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/pod/handoff"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
)

// Controller is anything the manager runs: a reconciler or a loop.
type Controller interface {
	// Name identifies the controller in logs and metrics.
	Name() string
	// Register adds the controller (and its watches) to the manager.
	Register(ctx context.Context, mgr manager.Manager) error
}

// Dependencies are what the controllers share.
type Dependencies struct {
	Clock         clock.WithTicker
	KubeClient    client.Client
	Cluster       *state.Cluster
	CloudProvider cloudprovider.CloudProvider
	Recorder      events.Recorder
	Metrics       *metrics.Metrics
}

// Options tune the controllers.
type Options struct {
	Provisioning      provisioning.Options
	Lifecycle         lifecycle.Options
	GarbageCollection garbagecollection.Options
	Disruption        disrupter.Options
	// NodeRepair runs the node.health controller, which replaces nodes
	// the cloud provider's repair policies call unhealthy (gate NodeRepair).
	NodeRepair bool
}

// NewControllers builds every provider-neutral controller.
func NewControllers(d Dependencies, opts Options) []Controller {
	provisioner := provisioning.NewProvisioner(d.Clock, d.KubeClient, d.Cluster, d.CloudProvider, d.Recorder, d.Metrics, opts.Provisioning)
	evictions := eviction.NewQueue(d.Clock, d.KubeClient, d.Recorder, d.Metrics)
	disruptionLoop, disruptionQueue := disrupter.NewController(d.Clock, d.KubeClient, d.Cluster, d.CloudProvider, d.Recorder, d.Metrics, opts.Disruption)
	out := []Controller{}
	for _, c := range informer.NewControllers(d.Cluster) {
		out = append(out, c)
	}
	if opts.NodeRepair {
		out = append(out, health.NewController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, d.Metrics))
	}
	return append(out,
		provisioner,
		provisioning.NewPodTrigger(provisioner),
		provisioning.NewNodeTrigger(provisioner),
		lifecycle.NewController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, d.Metrics, opts.Lifecycle),
		handoff.NewController(d.KubeClient, d.Cluster),
		garbagecollection.NewController(d.Clock, d.KubeClient, d.CloudProvider, d.Metrics, opts.GarbageCollection),
		evictions,
		termination.NewNodeController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, d.Metrics, evictions),
		termination.NewNodeClaimController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, d.Metrics),
		readiness.NewController(d.Clock, d.KubeClient, d.CloudProvider),
		hash.NewController(d.KubeClient),
		status.NewController(d.KubeClient, d.Metrics),
		podmetrics.NewController(d.KubeClient, d.Metrics),
		clustermetrics.NewController(d.Clock, d.KubeClient, d.Cluster, d.Metrics),
		disruptionLoop,
		disruptionQueue,
		expiration.NewController(d.Clock, d.KubeClient, d.Recorder, d.Metrics),
		disruptionstatus.NewController(d.Clock, d.KubeClient, d.CloudProvider),
		disruptionstatus.NewPodEventsController(d.Clock, d.KubeClient),
	)
}

// Register adds every controller to the manager.
func Register(ctx context.Context, mgr manager.Manager, controllers []Controller) error {
	for _, c := range controllers {
		if err := c.Register(ctx, mgr); err != nil {
			return err
		}
	}
	return nil
}
