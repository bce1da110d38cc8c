// Package informer holds the thin reconcilers that keep the cluster-state
// model (package state) in step with the API server: one per kind, whose only
// job is to hand the model the informer cache's latest object or remove it. They are the
// model's only writers; updates go through controller-runtime work queues
// (retried with backoff), never through side effects in predicates.
package informer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// Controller keeps one kind of object in the cluster-state model.
type Controller struct {
	name    string
	object  func() client.Object
	update  func(client.Object)
	remove  func(key client.ObjectKey)
	workers int
	// store is the informer's own store, read by Reconcile; reader is the
	// fallback for a cache whose informers do not expose one.
	store  toolscache.Store
	reader client.Reader
}

// storeOwner is what client-go's shared informers (the manager cache's)
// offer besides controller-runtime's Informer interface.
type storeOwner interface {
	GetStore() toolscache.Store
}

// Name identifies the controller in logs and metrics.
func (c *Controller) Name() string { return c.name }

// Reconcile reads the object from the informer cache and records it, or
// forgets it when it is gone.
//
// The model keeps the informer cache's own object, not a copy. The cache
// replaces an object on each watch event and never changes one in place, and
// the model and its readers treat what it holds as read-only, so one copy of
// every pod and NodeClaim is enough. At 10,000 pods the model's deep copies
// were a fifth of the controller's live heap, and its shallow copies (the
// Pod struct alone is 1.3 KB) a tenth.
// (The cache's objects have an empty TypeMeta; the model's readers take
// kinds from the scheme.)
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if c.store != nil {
		item, exists, err := c.store.GetByKey(toolscache.NewObjectName(req.Namespace, req.Name).String())
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("reading %s from the informer's store: %w", req.NamespacedName, err)
		}
		if !exists {
			c.remove(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		obj, ok := item.(client.Object)
		if !ok {
			return reconcile.Result{}, fmt.Errorf("the informer's store holds a %T for %s", item, req.NamespacedName)
		}
		c.update(obj)
		return reconcile.Result{}, nil
	}
	obj := c.object()
	if err := c.reader.Get(ctx, req.NamespacedName, obj, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			c.remove(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading %s: %w", req.NamespacedName, err)
	}
	c.update(obj)
	return reconcile.Result{}, nil
}

// Register adds the controller to the manager.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	c.reader = mgr.GetClient()
	informer, err := mgr.GetCache().GetInformer(ctx, c.object())
	if err != nil {
		return fmt.Errorf("getting the %s informer: %w", c.name, err)
	}
	if owner, ok := informer.(storeOwner); ok {
		c.store = owner.GetStore()
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.name).
		For(c.object()).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.workers}).
		Complete(c)
}

// NewNodeController keeps Nodes in the model.
func NewNodeController(cluster *state.Cluster) *Controller {
	return &Controller{
		name:    "state.node",
		object:  func() client.Object { return &corev1.Node{} },
		update:  func(o client.Object) { cluster.UpdateNode(o.(*corev1.Node)) },
		remove:  func(k client.ObjectKey) { cluster.DeleteNode(k.Name) },
		workers: 10,
	}
}

// NewNodeClaimController keeps NodeClaims in the model.
func NewNodeClaimController(cluster *state.Cluster) *Controller {
	return &Controller{
		name:    "state.nodeclaim",
		object:  func() client.Object { return &v1.NodeClaim{} },
		update:  func(o client.Object) { cluster.UpdateNodeClaim(o.(*v1.NodeClaim)) },
		remove:  func(k client.ObjectKey) { cluster.DeleteNodeClaim(k.Name) },
		workers: 10,
	}
}

// NewPodController keeps pods (their node bindings) in the model.
func NewPodController(cluster *state.Cluster) *Controller {
	return &Controller{
		name:   "state.pod",
		object: func() client.Object { return &corev1.Pod{} },
		update: func(o client.Object) {
			pod := o.(*corev1.Pod)
			cluster.UpdatePod(pod)
			cluster.UpdateDaemonSetPod(pod)
		},
		remove:  cluster.DeletePod,
		workers: 20,
	}
}

// NewDaemonSetController keeps daemonsets in the model.
func NewDaemonSetController(cluster *state.Cluster) *Controller {
	return &Controller{
		name:    "state.daemonset",
		object:  func() client.Object { return &appsv1.DaemonSet{} },
		update:  func(o client.Object) { cluster.UpdateDaemonSet(o.(*appsv1.DaemonSet)) },
		remove:  cluster.DeleteDaemonSet,
		workers: 2,
	}
}

// NewLimitRangeController keeps LimitRanges in the model, for the
// defaults admission gives daemon pods.
func NewLimitRangeController(cluster *state.Cluster) *Controller {
	return &Controller{
		name:    "state.limitrange",
		object:  func() client.Object { return &corev1.LimitRange{} },
		update:  func(o client.Object) { cluster.UpdateLimitRange(o.(*corev1.LimitRange)) },
		remove:  cluster.DeleteLimitRange,
		workers: 1,
	}
}

// NewControllers returns every informer controller of the model.
func NewControllers(cluster *state.Cluster) []*Controller {
	return []*Controller{
		NewNodeController(cluster), NewNodeClaimController(cluster),
		NewPodController(cluster), NewDaemonSetController(cluster),
		NewLimitRangeController(cluster),
	}
}
