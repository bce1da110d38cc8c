package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// launch creates the claim's instance. The provider's Create is idempotent
// for a claim, so a retry after a crash finds the same instance. A launch
// this process made but whose claim is not yet seen Launched (the status
// write conflicted, or the cache has not delivered it yet) is recorded
// again from memory: no second Create, log line or metric.
func (c *Controller) launch(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	if isTrue(nc, v1.ConditionTypeLaunched) {
		c.launches.forget(nc.UID)
		return reconcile.Result{}, false, nil
	}
	now := metav1.NewTime(c.clock.Now())
	if created, ok := c.launches.get(nc.UID); ok {
		recordLaunch(nc, created, now)
		return reconcile.Result{}, false, nil
	}
	// The claim is read from the API server before its instance is made:
	// the cache may still hold a claim that was deleted (by this
	// controller for insufficient capacity, by a disruption command's
	// rollback moments after creating it, by a user) and, having no
	// instance, let go at once by termination; an instance launched for it
	// would belong to no claim. Claims carry their finalizer from
	// creation, so no write of this controller has confirmed the claim
	// before this point.
	live, err := c.stillWanted(ctx, nc)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	if !live {
		return reconcile.Result{}, true, nil
	}
	start := c.clock.Now()
	created, err := c.cloudProvider.Create(ctx, nc)
	c.observe("Create", start, err)
	switch {
	case err == nil:
	case cloudprovider.IsInsufficientCapacityError(err):
		// 1. No offering can be launched: delete the claim; the provider marks
		//    the offerings unavailable, so the next simulation avoids them.
		c.recorder.Publish(insufficientCapacityEvent(nc, err))
		log.FromContext(ctx).Info("Deleting NodeClaim: insufficient capacity", "NodeClaim", klog.KObj(nc), "error", err.Error())
		return reconcile.Result{}, true, c.deleteClaim(ctx, nc, "insufficient_capacity")
	case cloudprovider.IsNodeClassNotReadyError(err):
		// 2. The NodeClass cannot be used: delete the claim; provisioning
		//    skips the pool until its NodeClass is ready.
		c.recorder.Publish(nodeClassNotReadyEvent(nc, err))
		log.FromContext(ctx).Info("Deleting NodeClaim: NodeClass not ready", "NodeClaim", klog.KObj(nc), "error", err.Error())
		return reconcile.Result{}, true, c.deleteClaim(ctx, nc, "nodeclass_not_ready")
	default:
		// 3. Any other failure: say why on the claim and retry with backoff;
		//    liveness deletes the claim if it never launches.
		reason, message := "LaunchFailed", err.Error()
		if createErr, ok := cloudprovider.AsCreateError(err); ok {
			reason, message = createErr.ConditionReason, createErr.ConditionMessage
		}
		setCondition(nc, now, v1.ConditionTypeLaunched, metav1.ConditionUnknown, reason, message)
		c.recorder.Publish(launchFailedEvent(nc, reason, message))
		return reconcile.Result{}, false, fmt.Errorf("launching nodeclaim: %w", err)
	}
	// 4. Record what was launched, and remember it until the claim says so.
	c.launches.put(nc.UID, created)
	recordLaunch(nc, created, now)
	c.metrics.NodeClaimsLaunched.WithLabelValues(nc.Labels[v1.NodePoolLabelKey]).Inc()
	log.FromContext(ctx).Info("Launched NodeClaim", "NodeClaim", klog.KObj(nc), "providerID", nc.Status.ProviderID,
		"instanceType", nc.Labels["node.kubernetes.io/instance-type"], "zone", nc.Labels["topology.kubernetes.io/zone"],
		"capacityType", nc.Labels[v1.CapacityTypeLabelKey])
	return reconcile.Result{}, false, nil
}

// stillWanted reports whether the API server still holds the claim (the
// same one, by UID) and it is not being deleted.
func (c *Controller) stillWanted(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	live := &v1.NodeClaim{}
	if err := c.apiReader.Get(ctx, client.ObjectKeyFromObject(nc), live); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading nodeclaim before its launch: %w", err)
	}
	return live.UID == nc.UID && live.DeletionTimestamp == nil, nil
}

// recordLaunch copies what the provider launched onto the claim.
func recordLaunch(nc, created *v1.NodeClaim, now metav1.Time) {
	nc.Labels = mergeMaps(nc.Labels, created.Labels)
	nc.Annotations = mergeMaps(nc.Annotations, created.Annotations)
	nc.Status.ProviderID = created.Status.ProviderID
	nc.Status.ImageID = created.Status.ImageID
	nc.Status.Capacity = created.Status.Capacity
	nc.Status.Allocatable = created.Status.Allocatable
	setCondition(nc, now, v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
}

// observe records the duration and failure kind of a cloud-provider call.
func (c *Controller) observe(method string, start time.Time, err error) {
	provider := c.cloudProvider.Name()
	c.metrics.CloudProviderDuration.WithLabelValues(c.Name(), method, provider).Observe(c.clock.Since(start).Seconds())
	if err != nil {
		c.metrics.CloudProviderErrors.WithLabelValues(c.Name(), method, provider, errorKind(err)).Inc()
	}
}

func errorKind(err error) string {
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNodeClassNotReadyError(err):
		return "NodeClassNotReadyError"
	case cloudprovider.IsNodeClaimNotFoundError(err):
		return "NodeClaimNotFoundError"
	case cloudprovider.IsCreateError(err):
		return "CreateError"
	}
	return "Other"
}

// mergeMaps returns dst with src's entries added (src wins), allocating as needed.
func mergeMaps(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}
