package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// nodeRecheck bounds how long a NodeClaim waits for its Node to go without
// hearing of it.
const nodeRecheck = 30 * time.Second

// NodeClaimController is the finalizer of NodeClaims: it has the claim's
// Node drained and deleted, then terminates the instance and lets the
// NodeClaim go.
type NodeClaimController struct {
	clock         clock.Clock
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	metrics       *metrics.Metrics
}

// NewNodeClaimController returns the NodeClaim finalizer controller.
func NewNodeClaimController(clk clock.Clock, kubeClient client.Client, cloudProvider cloudprovider.CloudProvider,
	recorder events.Recorder, m *metrics.Metrics) *NodeClaimController {
	return &NodeClaimController{clock: clk, kubeClient: kubeClient, cloudProvider: cloudProvider, recorder: recorder, metrics: m}
}

// Name names the controller in logs and metrics.
func (c *NodeClaimController) Name() string { return "nodeclaim.termination" }

// Register watches deleted NodeClaims, and Nodes coming and going, so that a
// claim moves on as soon as its Node is gone (or deletes a Node that
// registers late).
func (c *NodeClaimController) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}, builder.WithPredicates(finalizing())).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfNode), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return true },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

func (c *NodeClaimController) nodeClaimsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	nodeClaims, err := nodeClaimsFor(ctx, c.kubeClient, o.(*corev1.Node).Spec.ProviderID)
	if err != nil {
		log.FromContext(ctx).Error(err, "Mapping Node to its NodeClaims")
		return nil
	}
	var out []reconcile.Request
	for _, nc := range nodeClaims {
		if !nc.DeletionTimestamp.IsZero() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)})
		}
	}
	return out
}

// Reconcile finalizes a deleted NodeClaim that carries the termination finalizer.
func (c *NodeClaimController) Reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (reconcile.Result, error) {
	if nodeClaim.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(nodeClaim, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	result, err := c.finalize(ctx, nodeClaim)
	return requeueOnConflict(ctx, result, err)
}

func (c *NodeClaimController) finalize(ctx context.Context, nodeClaim *v1.NodeClaim) (reconcile.Result, error) {
	// 1. A claim that never launched has nothing to terminate, and no
	// pods whose deletion a deadline would govern. (Claims carry their
	// finalizer from creation, so those deleted before their launch, such
	// as a rolled-back command's replacements, come here too.)
	if nodeClaim.Status.ProviderID == "" {
		return reconcile.Result{}, c.removeFinalizer(ctx, nodeClaim)
	}

	// 2. Record the termination deadline, so that the Node finalizer and
	// anyone reading the claim agree on when pods are deleted regardless of
	// PDBs.
	if err := c.annotateTerminationTime(ctx, nodeClaim); err != nil {
		return reconcile.Result{}, err
	}

	// 3. Delete the Node and wait until it is gone: its own finalizer drains it.
	nodes, err := nodesFor(ctx, c.kubeClient, nodeClaim.Status.ProviderID)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, node := range nodes {
		if !node.DeletionTimestamp.IsZero() {
			continue
		}
		log.FromContext(ctx).V(0).Info("Deleting Node of deleted NodeClaim", "Node", klog.KObj(node))
		if err := c.kubeClient.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", node.Name, err)
		}
	}
	if len(nodes) > 0 {
		return reconcile.Result{RequeueAfter: nodeRecheck}, nil
	}

	// 4. Terminate the instance until the provider reports it gone.
	gone, err := terminateInstance(ctx, c.kubeClient, c.cloudProvider, c.recorder, c.clock.Now(), nodeClaim, true)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !gone {
		return reconcile.Result{RequeueAfter: instanceRecheck}, nil
	}

	// 5. Let the NodeClaim go.
	return reconcile.Result{}, c.removeFinalizer(ctx, nodeClaim)
}

// annotateTerminationTime stamps deletion time + terminationGracePeriod on
// the claim, unless it has no grace period or already carries a deadline
// (which a forceful terminator may have set earlier on purpose).
func (c *NodeClaimController) annotateTerminationTime(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if nodeClaim.Spec.TerminationGracePeriod == nil {
		return nil
	}
	if _, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	deadline := nodeClaim.DeletionTimestamp.Add(nodeClaim.Spec.TerminationGracePeriod.Duration).UTC()
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = deadline.Format(time.RFC3339)
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("annotating nodeclaim with its termination time: %w", err)
	}
	log.FromContext(ctx).V(1).Info("Annotated NodeClaim with its termination time", "terminationTime", deadline.Format(time.RFC3339))
	c.recorder.Publish(terminationGracePeriodExpiringEvent(nodeClaim, nodeClaim.Name, deadline))
	return nil
}

// removeFinalizer lets the NodeClaim go. Custom resources take no strategic
// merge patch, so the finalizer list is replaced under an optimistic lock.
func (c *NodeClaimController) removeFinalizer(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	stored := nodeClaim.DeepCopy()
	if !controllerutil.RemoveFinalizer(nodeClaim, v1.TerminationFinalizer) {
		return nil
	}
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing termination finalizer from nodeclaim: %w", err))
	}
	c.metrics.NodeClaimsTerminated.WithLabelValues(nodeClaim.Labels[v1.NodePoolLabelKey]).Inc()
	log.FromContext(ctx).V(0).Info("Removed termination finalizer from NodeClaim")
	return nil
}
