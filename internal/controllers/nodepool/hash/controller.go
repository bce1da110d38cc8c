// Package hash keeps a NodePool's template hash in its annotations, so users
// and drift detection can see which template version a NodeClaim was made from.
package hash

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
)

// Controller annotates NodePools with their template hash.
type Controller struct {
	kubeClient client.Client
}

// NewController returns the hash controller.
func NewController(kubeClient client.Client) *Controller { return &Controller{kubeClient: kubeClient} }

// Name identifies the controller.
func (c *Controller) Name() string { return "nodepool.hash" }

// Reconcile writes the hash annotations when they changed. When the
// NodePool's hash version is not the current one (a NodePool last hashed by
// an older Dovetail, or by another Karpenter version), the pool's NodeClaims
// of another version are re-stamped first, as Karpenter does: their hash
// cannot be compared with the new one, so each gets the current version and,
// unless it is already Drifted (which it stays), the pool's current hash.
func (c *Controller) Reconcile(ctx context.Context, np *v1.NodePool) (reconcile.Result, error) {
	hash := nodepoolutil.TemplateHash(np)
	if np.Annotations[v1.NodePoolHashAnnotationKey] == hash && np.Annotations[v1.NodePoolHashVersionAnnotationKey] == nodepoolutil.HashVersion {
		return reconcile.Result{}, nil
	}
	if np.Annotations[v1.NodePoolHashVersionAnnotationKey] != nodepoolutil.HashVersion {
		if err := c.restampNodeClaims(ctx, np, hash); err != nil {
			return reconcile.Result{}, err
		}
	}
	stored := np.DeepCopy()
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[v1.NodePoolHashAnnotationKey] = hash
	np.Annotations[v1.NodePoolHashVersionAnnotationKey] = nodepoolutil.HashVersion
	if err := c.kubeClient.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating nodepool hash: %w", err))
	}
	return reconcile.Result{}, nil
}

// restampNodeClaims gives the pool's NodeClaims whose hash version is not
// the current one the current version, and the hash unless they are
// already Drifted (Karpenter's updateNodeClaimHash rule).
func (c *Controller) restampNodeClaims(ctx context.Context, np *v1.NodePool, hash string) error {
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
		return fmt.Errorf("listing nodeclaims of nodepool %s: %w", np.Name, err)
	}
	var errs []error
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] == nodepoolutil.HashVersion {
			continue
		}
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[v1.NodePoolHashVersionAnnotationKey] = nodepoolutil.HashVersion
		if meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDrifted) == nil {
			nc.Annotations[v1.NodePoolHashAnnotationKey] = hash
		}
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("re-stamping nodeclaim %s with hash version %s: %w", nc.Name, nodepoolutil.HashVersion, err))
		}
	}
	return errors.Join(errs...)
}

// Register watches NodePools.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&v1.NodePool{}).Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}
