package termination

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

const (
	// instanceRecheck is how often a terminating or failing instance is
	// checked again: the provider has no watch.
	instanceRecheck = 5 * time.Second
	// conflictRetry is how soon a reconcile that lost an optimistic-lock
	// race runs again, with a fresh read.
	conflictRetry = time.Second
)

// NodeClaim condition reasons set by termination (AwaitingVolumeDetachment,
// shared with the event, is in events.go).
const (
	ReasonDraining                      = "Draining"
	ReasonDrained                       = "Drained"
	ReasonVolumesDetached               = "VolumesDetached"
	ReasonTerminationGracePeriodElapsed = "TerminationGracePeriodElapsed"
	ReasonInstanceTerminating           = "InstanceTerminating"
	ReasonInstanceTerminated            = "InstanceTerminated"
	ReasonInstanceTerminationFailed     = "InstanceTerminationFailed"
)

// setCondition sets a condition on the NodeClaim's status and patches it if
// it changed, under an optimistic lock: a JSON merge patch replaces the
// whole conditions list, so a concurrent writer must not be overwritten.
// It reports whether the condition changed.
func setCondition(ctx context.Context, c client.Client, now time.Time, nodeClaim *v1.NodeClaim, cond metav1.Condition) (bool, error) {
	stored := nodeClaim.DeepCopy()
	cond.ObservedGeneration = nodeClaim.Generation
	cond.LastTransitionTime = metav1.NewTime(now)
	if !meta.SetStatusCondition(&nodeClaim.Status.Conditions, cond) {
		return false, nil
	}
	if err := c.Status().Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("setting nodeclaim condition %s=%s: %w", cond.Type, cond.Status, err)
	}
	return true, nil
}

// terminationTime returns the deadline after which the node's pods are
// deleted regardless of PDBs and do-not-disrupt: the NodeClaim's
// termination-timestamp annotation or, until that is written (or if it does
// not parse), deletion time + spec.terminationGracePeriod. It returns nil
// when the claim has no termination grace period. A malformed annotation is
// reported as an error next to the fallback deadline, so that bad input
// never stalls termination.
func terminationTime(nodeClaim *v1.NodeClaim) (*time.Time, error) {
	if nodeClaim == nil {
		return nil, nil
	}
	var parseErr error
	if value, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t, err := time.Parse(time.RFC3339, value)
		if err == nil {
			return &t, nil
		}
		parseErr = fmt.Errorf("parsing annotation %s=%q: %w", v1.NodeClaimTerminationTimestampAnnotationKey, value, err)
	}
	if nodeClaim.Spec.TerminationGracePeriod == nil || nodeClaim.DeletionTimestamp == nil {
		return nil, parseErr
	}
	t := nodeClaim.DeletionTimestamp.Add(nodeClaim.Spec.TerminationGracePeriod.Duration)
	return &t, parseErr
}

// terminateInstance asks the cloud provider to delete the NodeClaim's
// instance and records the outcome on its InstanceTerminating condition. It
// reports whether the instance is gone (Delete returned
// NodeClaimNotFoundError). A provider error is published as an event and
// recorded on the condition, then retried by the caller; only API errors are
// returned. When record is false (a stand-in claim built from a Node) no
// condition is written.
func terminateInstance(ctx context.Context, c client.Client, cp cloudprovider.CloudProvider, recorder events.Recorder,
	now time.Time, nodeClaim *v1.NodeClaim, record bool) (bool, error) {
	deleteErr := cp.Delete(ctx, nodeClaim)
	gone := cloudprovider.IsNodeClaimNotFoundError(deleteErr)
	cond := metav1.Condition{Type: v1.ConditionTypeInstanceTerminating, Status: metav1.ConditionTrue}
	switch {
	case gone:
		cond.Reason, cond.Message = ReasonInstanceTerminated, "Instance is terminated"
	case deleteErr == nil:
		cond.Reason, cond.Message = ReasonInstanceTerminating, "Instance is terminating"
	default:
		log.FromContext(ctx).Error(deleteErr, "Terminating instance", "providerID", nodeClaim.Status.ProviderID)
		recorder.Publish(failedTerminationEvent(nodeClaim, deleteErr))
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, ReasonInstanceTerminationFailed, deleteErr.Error()
	}
	if !record {
		return gone, nil
	}
	changed, err := setCondition(ctx, c, now, nodeClaim, cond)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if changed && deleteErr == nil {
		log.FromContext(ctx).V(1).Info("Terminating instance", "providerID", nodeClaim.Status.ProviderID)
	}
	return gone, nil
}

// requeueOnConflict turns a write that lost an optimistic-lock race into a
// quick requeue (the next pass reads the winner's version) instead of an
// error with backoff.
func requeueOnConflict(ctx context.Context, result reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("Retrying after a conflicting write", "error", err.Error())
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return result, err
}
