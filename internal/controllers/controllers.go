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
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/overlay"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	clustermetrics "github.com/dovetail-autoscaler/dovetail/internal/controllers/metrics/cluster"
	podmetrics "github.com/dovetail-autoscaler/dovetail/internal/controllers/metrics/pod"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/disruptionstatus"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/expiration"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeoverlay"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/hash"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/readiness"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/static"
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
	Clock      clock.WithTicker
	KubeClient client.Client
	// APIReader reads from the API server without the cache (the
	// manager's APIReader), where a cached read can be too old; nil reads
	// through KubeClient.
	APIReader     client.Reader
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
	// DryRun is shadow mode (see ReadOnly): only the controllers that read
	// run, and provisioning and disruption publish their decisions
	// instead of acting on them.
	DryRun bool
	// DisableNodeOverlay turns NodeOverlays off (gate NodeOverlay=false):
	// the controllers see the cloud provider's instance types as they are
	// and the nodeoverlay controller does not run. They are on by default.
	DisableNodeOverlay bool
}

// NewControllers builds every provider-neutral controller. With
// opts.DryRun it builds only the read-only ones (see ReadOnly). Unless
// opts.DisableNodeOverlay, every controller gets the cloud provider
// decorated with the cluster's NodeOverlays (package overlay), so that
// provisioning, consolidation, static pools and launches see the overlaid
// prices and capacity.
func NewControllers(d Dependencies, opts Options) []Controller {
	opts.Provisioning.DryRun = opts.Provisioning.DryRun || opts.DryRun
	opts.Disruption.DryRun = opts.Disruption.DryRun || opts.DryRun
	rawProvider := d.CloudProvider
	if !opts.DisableNodeOverlay {
		d.CloudProvider = overlay.Decorate(rawProvider, d.KubeClient, d.Clock)
	}
	// Node repair: the health controller asks, the disruption loop
	// replaces (one set between them).
	var repairs *health.Requests
	if opts.NodeRepair && !opts.DryRun {
		repairs = health.NewRequests()
		opts.Disruption.Repairs = repairs
	}
	provisioner := provisioning.NewProvisioner(d.Clock, d.KubeClient, d.Cluster, d.CloudProvider, d.Recorder, d.Metrics, opts.Provisioning)
	disruptionLoop, disruptionQueue := disrupter.NewController(d.Clock, d.KubeClient, d.Cluster, d.CloudProvider, d.Recorder, d.Metrics, opts.Disruption)
	out := []Controller{}
	for _, c := range informer.NewControllers(d.Cluster) {
		out = append(out, c)
	}
	readOnly := []Controller{
		provisioner,
		provisioning.NewPodTrigger(provisioner),
		provisioning.NewNodeTrigger(provisioner),
		podmetrics.NewController(d.KubeClient, d.Metrics),
		clustermetrics.NewController(d.Clock, d.KubeClient, d.Cluster, d.Metrics),
		disruptionLoop,
	}
	if opts.DryRun {
		return append(out, readOnly...)
	}
	if opts.NodeRepair {
		out = append(out, health.NewController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, repairs))
	}
	if !opts.DisableNodeOverlay {
		out = append(out, nodeoverlay.NewController(d.Clock, d.KubeClient, rawProvider, provisioner.Trigger))
	}
	evictions := eviction.NewQueue(d.Clock, d.KubeClient, d.Recorder, d.Metrics)
	nominator := handoff.NewController(d.KubeClient, d.Cluster, provisioner.Trigger)
	return append(append(out, readOnly...),
		lifecycle.NewController(d.Clock, d.KubeClient, d.APIReader, d.CloudProvider, d.Recorder, d.Metrics, nominator, opts.Lifecycle),
		nominator,
		garbagecollection.NewController(d.Clock, d.KubeClient, d.CloudProvider, d.Metrics, opts.GarbageCollection),
		evictions,
		termination.NewNodeController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, d.Metrics, evictions),
		termination.NewNodeClaimController(d.Clock, d.KubeClient, d.CloudProvider, d.Recorder, d.Metrics),
		readiness.NewController(d.Clock, d.KubeClient, d.CloudProvider),
		hash.NewController(d.KubeClient),
		status.NewController(d.KubeClient, d.Metrics),
		static.NewController(d.Clock, d.KubeClient, d.Cluster, d.CloudProvider, d.Recorder, d.Metrics),
		disruptionQueue,
		expiration.NewController(d.Clock, d.KubeClient, d.Recorder, d.Metrics),
		disruptionstatus.NewController(d.Clock, d.KubeClient, d.CloudProvider),
		disruptionstatus.NewPodEventsController(d.Clock, d.KubeClient),
	)
}

// ReadOnly says, for every controller NewControllers builds (by name),
// whether it runs in shadow mode (--dry-run) and why. Only controllers that write
// nothing but events and metrics run: the cluster-state informers, the
// provisioner and its triggers (plans published, no NodeClaim created, no
// pod nominated), the pod and cluster metrics, and the disruption loop
// (decisions published; no taint, condition or command). Every other
// controller writes NodeClaims, Nodes, NodePools or pods and is left out.
func ReadOnly() map[string]string {
	return map[string]string{
		"state.node":                  "on: feeds the in-memory cluster-state model; reads only",
		"state.nodeclaim":             "on: feeds the in-memory cluster-state model; reads only",
		"state.pod":                   "on: feeds the in-memory cluster-state model; reads only",
		"state.daemonset":             "on: feeds the in-memory cluster-state model; reads only",
		"state.limitrange":            "on: feeds the in-memory cluster-state model; reads only",
		"provisioner":                 "on: simulates pending pods and publishes the plan (ShadowLaunch and ShadowNominated events, dovetail_shadow_* metrics, logs); creates no NodeClaim and nominates no pod",
		"provisioner.trigger.pod":     "on: wakes the provisioner; reads only",
		"provisioner.trigger.node":    "on: wakes the provisioner; reads only",
		"metrics.pod":                 "on: Karpenter's pod metrics; reads only",
		"metrics.cluster":             "on: Karpenter's node and NodePool metrics; reads only",
		"disruption":                  "on: decides and publishes (ShadowDisrupt events, dovetail_shadow_* metrics, logs); recovers no command, removes no taint or condition, starts no command",
		"disruption.queue":            "off: taints nodes, sets DisruptionReason, creates replacement NodeClaims, deletes candidates",
		"nodeclaim.lifecycle":         "off: launches instances, writes NodeClaim status, labels and taints Nodes, nominates pods",
		"nodeclaim.garbagecollection": "off: deletes NodeClaims and instances",
		"eviction":                    "off: evicts pods",
		"node.termination":            "off: drains Nodes and removes their finalizer",
		"nodeclaim.termination":       "off: terminates instances and removes NodeClaim finalizers",
		"nodepool.readiness":          "off: writes NodePool status conditions",
		"nodepool.hash":               "off: writes the NodePool hash annotation",
		"nodepool.status":             "off: writes NodePool status resources",
		"nodepool.static":             "off: creates and deletes the NodeClaims of static NodePools",
		"nodeclaim.expiration":        "off: deletes expired NodeClaims",
		"nodeclaim.disruption":        "off: writes the Drifted and Consolidatable conditions",
		"nodeclaim.podevents":         "off: writes NodeClaim status.lastPodEventTime",
		"node.health":                 "off: asks the disruption queue to replace unhealthy NodeClaims, which it then deletes",
		"pod.handoff":                 "off: writes pods' status.nominatedNodeName (the plan handed to the kube-scheduler)",
		"nodeoverlay":                 "off: writes NodeOverlay status conditions (shadow mode still applies the overlays, resolving conflicts per NodePool)",
	}
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
