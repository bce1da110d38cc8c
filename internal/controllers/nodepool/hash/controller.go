// Package hash keeps a NodePool's template hash in its annotations, so users
// and drift detection can see which template version a NodeClaim was made from.
package hash

import (
	"context"
	"fmt"

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

// Reconcile writes the hash annotations when they changed.
func (c *Controller) Reconcile(ctx context.Context, np *v1.NodePool) (reconcile.Result, error) {
	hash := nodepoolutil.TemplateHash(np)
	if np.Annotations[v1.NodePoolHashAnnotationKey] == hash && np.Annotations[v1.NodePoolHashVersionAnnotationKey] == nodepoolutil.HashVersion {
		return reconcile.Result{}, nil
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

// Register watches NodePools.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&v1.NodePool{}).Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}
