package disruptionstatus

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
)

const (
	// driftRecheck is how often drift is re-evaluated without an event: the
	// cloud provider's view of a NodeClass can change without one.
	driftRecheck = 5 * time.Minute
	// conflictRetry is how soon a write that lost a race is retried.
	conflictRetry = time.Second
)

// Condition reasons of Consolidatable.
const (
	ReasonConsolidatable             = "Consolidatable"
	ReasonConsolidateAfterNotElapsed = "ConsolidateAfterNotElapsed"
)

// Controller sets the Drifted and Consolidatable conditions of NodeClaims.
type Controller struct {
	clock         clock.Clock
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
}

// NewController returns the NodeClaim disruption-conditions controller.
func NewController(clk clock.Clock, kubeClient client.Client, cp cloudprovider.CloudProvider) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cloudProvider: cp}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodeclaim.disruption" }

// Register watches NodeClaims, NodePools mapped to their NodeClaims (a
// template change drifts them, a consolidateAfter change moves their time)
// and the provider's NodeClass kinds mapped to the NodeClaims that reference
// them (a NodeClass whose resolved status changes, e.g. a new AMI, drifts
// them now rather than at the next periodic recheck).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		// Only a change of the pool's spec or annotations (its template
		// hash) can drift its claims or move their consolidateAfter; its
		// status changes with every claim and would requeue them all.
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfPool),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	for _, gvk := range c.cloudProvider.GetSupportedNodeClasses() {
		nodeClass := &unstructured.Unstructured{}
		nodeClass.SetGroupVersionKind(gvk)
		b = b.Watches(nodeClass, handler.EnqueueRequestsFromMapFunc(c.claimsOfNodeClass(gvk)))
	}
	err := b.WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

func (c *Controller) claimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims, client.MatchingFields{indexes.NodeClaimNodePoolName: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Mapping NodePool to its NodeClaims", "NodePool", klog.KObj(o))
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
	}
	return out
}

// claimsOfNodeClass maps a NodeClass of the kind to the NodeClaims that reference it.
func (c *Controller) claimsOfNodeClass(gvk schema.GroupVersionKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		claims := &v1.NodeClaimList{}
		if err := c.kubeClient.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "Mapping NodeClass to its NodeClaims", gvk.Kind, klog.KObj(o))
			return nil
		}
		var out []reconcile.Request
		for i := range claims.Items {
			ref := claims.Items[i].Spec.NodeClassRef
			if ref == nil || ref.Name != o.GetName() || ref.Kind != gvk.Kind {
				continue
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
		}
		return out
	}
}

// Reconcile brings the claim's Drifted and Consolidatable conditions up to date.
func (c *Controller) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	// 1. Only launched claims that are not being deleted have a NodePool
	// to drift from or a node to consolidate.
	if !nc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeLaunched) {
		return reconcile.Result{}, nil
	}
	np := &v1.NodePool{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nc.Labels[v1.NodePoolLabelKey]}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // not ours, or the pool is gone and its claims with it
		}
		return reconcile.Result{}, fmt.Errorf("reading nodepool: %w", err)
	}
	stored := nc.DeepCopy()
	now := c.clock.Now()
	result := reconcile.Result{RequeueAfter: driftRecheck}

	// 2. Drift: the NodePool's template and requirements, then the provider.
	reason, message := disruption.StaticDrift(nc, np)
	if reason == "" {
		drifted, err := c.cloudProvider.IsDrifted(ctx, nc)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("asking the cloud provider about drift: %w", err)
		}
		if drifted != "" {
			// The provider's reason is the condition's, as in Karpenter
			// (AMIDrift, SubnetDrift, ...), so each kind of drift shows.
			reason, message = string(drifted), "the instance no longer matches its NodeClass: "+string(drifted)
		}
	}
	if reason != "" {
		c.set(nc, now, v1.ConditionTypeDrifted, metav1.ConditionTrue, reason, message)
	} else {
		meta.RemoveStatusCondition(&nc.Status.Conditions, v1.ConditionTypeDrifted)
	}

	// 3. Consolidatable once consolidateAfter has passed since the last pod event.
	at, ok := disruption.ConsolidatableAt(nc, np)
	switch {
	case !ok:
		meta.RemoveStatusCondition(&nc.Status.Conditions, v1.ConditionTypeConsolidatable)
	case !now.Before(at):
		c.set(nc, now, v1.ConditionTypeConsolidatable, metav1.ConditionTrue, ReasonConsolidatable, "")
	default:
		// The message names no time: each pod event moves the time (a
		// stamp of lastPodEventTime every 10 s while pods arrive), and a
		// message that followed it would be one more write of the claim
		// per stamp. `dovetail explain` says when the node becomes
		// consolidatable.
		c.set(nc, now, v1.ConditionTypeConsolidatable, metav1.ConditionFalse, ReasonConsolidateAfterNotElapsed,
			fmt.Sprintf("consolidateAfter %s has not passed since the last pod event (status.lastPodEventTime)", np.Spec.Disruption.ConsolidateAfter.String()))
		result.RequeueAfter = min(result.RequeueAfter, at.Sub(now))
	}

	// 4. One write, under an optimistic lock so that other controllers'
	// conditions are never lost.
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim conditions: %w", err))
		}
		if reason != "" && !meta.IsStatusConditionTrue(stored.Status.Conditions, v1.ConditionTypeDrifted) {
			log.FromContext(ctx).V(0).Info("Marked NodeClaim drifted", "NodeClaim", klog.KObj(nc), "reason", reason, "message", message)
		}
	}
	return result, nil
}

// set sets a condition, stamping the transition time from the injected clock.
func (c *Controller) set(nc *v1.NodeClaim, now time.Time, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(now),
	})
}
