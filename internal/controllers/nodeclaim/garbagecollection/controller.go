// Package garbagecollection reconciles instances with NodeClaims every two
// minutes: an instance that no NodeClaim knows is terminated, and a
// registered NodeClaim whose instance has vanished (and whose Node is not
// Ready) is deleted. Nothing leaks when a controller crashes between
// launching an instance and recording it, or when an instance dies.
package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// Options tune garbage collection.
type Options struct {
	// Period between passes.
	Period time.Duration
	// MinInstanceAge protects instances younger than this, whose claim may
	// not have recorded them yet.
	MinInstanceAge time.Duration
}

// DefaultOptions collect every two minutes, sparing instances younger than 30 s.
func DefaultOptions() Options {
	return Options{Period: 2 * time.Minute, MinInstanceAge: 30 * time.Second}
}

// Controller is the garbage-collection loop.
type Controller struct {
	clock      clock.Clock
	kubeClient client.Client
	// apiReader reads from the API server itself. An instance is terminated
	// only once a live read confirms that no NodeClaim knows it: the
	// informer cache can lag for tens of seconds after the API server
	// restarts or throttles, and a claim launched meanwhile may be missing
	// from it (the chaos suite saw a running node terminated that way).
	apiReader     client.Reader
	cloudProvider cloudprovider.CloudProvider
	metrics       *metrics.Metrics
	opts          Options
}

// NewController returns the garbage collector.
func NewController(clk clock.Clock, kubeClient client.Client, cp cloudprovider.CloudProvider, m *metrics.Metrics, opts Options) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cloudProvider: cp, metrics: m, opts: opts}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodeclaim.garbagecollection" }

// Register adds the loop to the manager (leader only).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if c.apiReader == nil {
		c.apiReader = mgr.GetAPIReader()
	}
	return mgr.Add(c)
}

// WithAPIReader sets the uncached reader that confirms an instance is
// unknown before it is terminated (Register uses the manager's).
func (c *Controller) WithAPIReader(r client.Reader) *Controller {
	c.apiReader = r
	return c
}

// NeedLeaderElection makes the loop run on the leader only.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs a pass every period until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(c.Name()))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(c.opts.Period):
		}
		if err := c.Collect(ctx); err != nil {
			log.FromContext(ctx).Error(err, "Collecting garbage")
		}
	}
}

// Collect runs one pass.
func (c *Controller) Collect(ctx context.Context) error {
	instances, err := c.cloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	known := map[string]bool{}
	for i := range claims.Items {
		if id := claims.Items[i].Status.ProviderID; id != "" {
			known[id] = true
		}
	}
	alive := map[string]bool{}
	var errs []error
	// 1. Terminate instances that no NodeClaim knows, as the API server
	//    itself says, not only the cache.
	var orphans []*v1.NodeClaim
	for _, instance := range instances {
		alive[instance.Status.ProviderID] = true
		if known[instance.Status.ProviderID] || c.clock.Since(instance.CreationTimestamp.Time) < c.opts.MinInstanceAge {
			continue
		}
		orphans = append(orphans, instance)
	}
	if len(orphans) > 0 {
		var err error
		if orphans, err = c.confirmUnknown(ctx, orphans); err != nil {
			return fmt.Errorf("confirming instances without a NodeClaim: %w", err)
		}
	}
	for _, instance := range orphans {
		log.FromContext(ctx).Info("Terminating instance without a NodeClaim", "providerID", instance.Status.ProviderID)
		if err := c.cloudProvider.Delete(ctx, instance); cloudprovider.IgnoreNodeClaimNotFoundError(err) != nil {
			errs = append(errs, fmt.Errorf("terminating instance %s: %w", instance.Status.ProviderID, err))
		}
	}
	// 2. Delete registered claims whose instance is gone, unless the node
	//    still reports Ready (then the provider listing is the one to doubt).
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.DeletionTimestamp != nil || nc.Status.ProviderID == "" || alive[nc.Status.ProviderID] ||
			!meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeRegistered) {
			continue
		}
		if c.nodeReady(ctx, nc.Status.NodeName) {
			continue
		}
		log.FromContext(ctx).Info("Deleting NodeClaim whose instance is gone", "NodeClaim", klog.KObj(nc), "providerID", nc.Status.ProviderID)
		if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		c.metrics.NodeClaimsDisrupted.WithLabelValues("garbage_collected", nc.Labels[v1.NodePoolLabelKey]).Inc()
	}
	return errors.Join(errs...)
}

// confirmUnknown returns the instances that no NodeClaim in the API server
// (read live, not from the cache) records, either by provider ID or, for a
// claim whose launch is not recorded yet, by the claim name the instance
// carries.
func (c *Controller) confirmUnknown(ctx context.Context, instances []*v1.NodeClaim) ([]*v1.NodeClaim, error) {
	reader := c.apiReader
	if reader == nil {
		reader = c.kubeClient
	}
	live := &v1.NodeClaimList{}
	if err := reader.List(ctx, live); err != nil {
		return nil, fmt.Errorf("listing nodeclaims from the API server: %w", err)
	}
	known := make(map[string]bool, len(live.Items))
	unrecorded := map[string]bool{} // claims whose launch is not recorded yet
	for i := range live.Items {
		nc := &live.Items[i]
		if id := nc.Status.ProviderID; id != "" {
			known[id] = true
		} else if nc.DeletionTimestamp == nil {
			unrecorded[nc.Name] = true
		}
	}
	out := instances[:0]
	for _, instance := range instances {
		if known[instance.Status.ProviderID] || (instance.Name != "" && unrecorded[instance.Name]) {
			log.FromContext(ctx).V(1).Info("Instance unknown to the cache is recorded by a NodeClaim; the cache lags", "providerID", instance.Status.ProviderID)
			continue
		}
		out = append(out, instance)
	}
	return out, nil
}

func (c *Controller) nodeReady(ctx context.Context, name string) bool {
	if name == "" {
		return false
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return !apierrors.IsNotFound(err) // unsure: keep the claim
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
