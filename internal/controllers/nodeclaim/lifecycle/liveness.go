package lifecycle

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// liveness deletes a claim whose instance never launched within the launch
// timeout of its creation, or whose node never registered within the
// registration timeout of its launch.
func (c *Controller) liveness(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	if isTrue(nc, v1.ConditionTypeRegistered) {
		return reconcile.Result{}, false, nil
	}
	now := c.clock.Now()
	deadline, reason, what := nc.CreationTimestamp.Add(c.opts.LaunchTimeout), "launch_timeout", "instance did not launch in time"
	if launched := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeLaunched); launched != nil && launched.Status == "True" {
		deadline, reason, what = launched.LastTransitionTime.Add(c.opts.RegistrationTimeout), "registration_timeout", "node did not register in time"
	}
	if now.Before(deadline) {
		return reconcile.Result{RequeueAfter: deadline.Sub(now)}, false, nil
	}
	c.recorder.Publish(livenessTimeoutEvent(nc, what))
	log.FromContext(ctx).Info("Deleting NodeClaim: "+what, "NodeClaim", klog.KObj(nc))
	return reconcile.Result{}, true, c.deleteClaim(ctx, nc, reason)
}
