// Package expiration deletes NodeClaims that have lived longer than their
// spec.expireAfter. Expiration is forceful, as the v1 API defines it: it
// ignores disruption budgets and karpenter.sh/do-not-disrupt, and the
// drain that follows is bounded by the claim's terminationGracePeriod
// (the termination controller stamps the deadline). A claim that never
// expires (expireAfter: Never) is left alone. The clock is injected, so
// tests drive expiry without waiting.
package expiration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// MetricReason is the reason label of karpenter_nodeclaims_disrupted_total
// for expired claims.
const MetricReason = "expired"

// Controller deletes expired NodeClaims.
type Controller struct {
	clock      clock.Clock
	kubeClient client.Client
	recorder   events.Recorder
	metrics    *metrics.Metrics
}

// NewController returns the expiration controller.
func NewController(clk clock.Clock, kubeClient client.Client, recorder events.Recorder, m *metrics.Metrics) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, recorder: recorder, metrics: m}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodeclaim.expiration" }

// Register watches NodeClaims.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

// ExpirationTime is when the claim expires, and false if it never does.
func ExpirationTime(nc *v1.NodeClaim) (time.Time, bool) {
	if nc.Spec.ExpireAfter.IsNever() {
		return time.Time{}, false
	}
	return nc.CreationTimestamp.Add(*nc.Spec.ExpireAfter.Duration), true
}

// Reconcile deletes the claim once it has expired, or comes back then.
func (c *Controller) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	// 1. Claims being deleted, and claims that never expire, are not ours.
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	expiresAt, ok := ExpirationTime(nc)
	if !ok {
		return reconcile.Result{}, nil
	}
	// 2. Not yet: come back when it expires.
	now := c.clock.Now()
	if wait := expiresAt.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// 3. Record why on the claim, so that the drain reports it, then delete
	// it; termination drains the node within its terminationGracePeriod.
	if err := c.setDisruptionReason(ctx, nc, now); err != nil {
		return reconcile.Result{}, err
	}
	// The precondition makes a reconcile on a stale copy (already deleted
	// by an earlier pass) a no-op rather than a second count.
	if err := c.kubeClient.Delete(ctx, nc, client.Preconditions{UID: &nc.UID, ResourceVersion: &nc.ResourceVersion}); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting expired nodeclaim: %w", err))
	}
	pool := nc.Labels[v1.NodePoolLabelKey]
	c.metrics.NodeClaimsDisrupted.WithLabelValues(MetricReason, pool).Inc()
	c.recorder.Publish(expiredEvent(nc, expiresAt))
	log.FromContext(ctx).V(0).Info("Deleted expired NodeClaim", "NodeClaim", klog.KObj(nc), "NodePool", klog.KRef("", pool),
		"expireAfter", nc.Spec.ExpireAfter.String(), "expiredAt", expiresAt.UTC().Format(time.RFC3339))
	return reconcile.Result{}, nil
}

// setDisruptionReason sets DisruptionReason=True with reason Expired.
func (c *Controller) setDisruptionReason(ctx context.Context, nc *v1.NodeClaim, now time.Time) error {
	stored := nc.DeepCopy()
	changed := meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: string(v1.DisruptionReasonExpired),
		Message: "NodeClaim is older than its expireAfter (" + nc.Spec.ExpireAfter.String() + ")", ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
	if !changed {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting disruption reason of expired nodeclaim: %w", err))
	}
	return nil
}

func expiredEvent(nc *v1.NodeClaim, at time.Time) events.Event {
	return events.Event{
		InvolvedObject: nc,
		Type:           corev1.EventTypeNormal,
		Reason:         "DisruptionTerminating",
		Message: fmt.Sprintf("Disrupting NodeClaim: Expired (expireAfter %s passed at %s); the drain is bounded by its terminationGracePeriod",
			nc.Spec.ExpireAfter.String(), at.UTC().Format(time.RFC3339)),
		DedupeValues: []string{string(nc.UID)},
	}
}
