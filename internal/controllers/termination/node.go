package termination

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/drain"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

const (
	// drainRecheck bounds how long a draining node waits without an event
	// (pod, NodeClaim or VolumeAttachment change) before it looks again.
	drainRecheck = 15 * time.Second
	// forcefulTermination is the drain reason when the NodeClaim records no
	// disruption reason (the Node or NodeClaim was deleted by someone else).
	forcefulTermination = "Forceful Termination"
	// excludeFromLoadBalancersValue marks who set the exclude label.
	excludeFromLoadBalancersValue = "karpenter"
)

// NodeController is the finalizer of Nodes: it drains a deleted Node,
// waits for its volumes to detach, terminates its instance and then lets
// the Node go.
type NodeController struct {
	clock         clock.Clock
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	metrics       *metrics.Metrics
	evictionQueue *eviction.Queue
}

// NewNodeController returns the Node finalizer controller. evictionQueue
// must be started (registered with the same manager) for drains to progress.
func NewNodeController(clk clock.Clock, kubeClient client.Client, cloudProvider cloudprovider.CloudProvider,
	recorder events.Recorder, m *metrics.Metrics, evictionQueue *eviction.Queue) *NodeController {
	return &NodeController{clock: clk, kubeClient: kubeClient, cloudProvider: cloudProvider, recorder: recorder, metrics: m, evictionQueue: evictionQueue}
}

// Name names the controller in logs and metrics.
func (c *NodeController) Name() string { return "node.termination" }

// Register watches deleted Nodes, and the NodeClaims, pods and
// VolumeAttachments that decide how their termination progresses, so that a
// drain moves on as soon as a pod is gone rather than on a timer.
func (c *NodeController) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(finalizing())).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(c.nodesOfNodeClaim), builder.WithPredicates(finalizing())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.deletingNode(func(o client.Object) string {
			return o.(*corev1.Pod).Spec.NodeName
		}))).
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(c.deletingNode(func(o client.Object) string {
			return o.(*storagev1.VolumeAttachment).Spec.NodeName
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

// finalizing passes objects that are deleted and still carry the termination finalizer.
func finalizing() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return !o.GetDeletionTimestamp().IsZero() && controllerutil.ContainsFinalizer(o, v1.TerminationFinalizer)
	})
}

func (c *NodeController) nodesOfNodeClaim(ctx context.Context, o client.Object) []reconcile.Request {
	nodes, err := nodesFor(ctx, c.kubeClient, o.(*v1.NodeClaim).Status.ProviderID)
	if err != nil {
		log.FromContext(ctx).Error(err, "Mapping NodeClaim to its Nodes")
		return nil
	}
	var out []reconcile.Request
	for _, n := range nodes {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(n)})
	}
	return out
}

// deletingNode maps an object to the node it names, if that node is being
// terminated; other nodes have nothing to react to.
func (c *NodeController) deletingNode(nodeName func(client.Object) string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		name := nodeName(o)
		if name == "" {
			return nil
		}
		node := &corev1.Node{}
		if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil || node.DeletionTimestamp.IsZero() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
}

// Reconcile finalizes a deleted Node that carries the termination finalizer.
func (c *NodeController) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	result, err := c.finalize(ctx, node)
	return requeueOnConflict(ctx, result, err)
}

func (c *NodeController) finalize(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	// 1. Find the NodeClaim: it holds the termination deadline and the
	// conditions that report progress.
	nodeClaim, err := c.nodeClaimOf(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nodeClaim != nil {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim)))
	}

	// 2. Deleting a Node deletes its NodeClaim too, so that both
	// finalizers run whichever object the user deleted. The claim's update
	// brings this Node back with the claim as it is now.
	if nodeClaim != nil && nodeClaim.DeletionTimestamp.IsZero() {
		log.FromContext(ctx).V(0).Info("Deleting NodeClaim of deleted Node")
		if err := c.kubeClient.Delete(ctx, nodeClaim); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim: %w", err)
		}
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}

	// 3. A NotReady node whose instance the provider no longer has cannot
	// be drained: its pods are already dead. A Ready node is drained even
	// then, since its kubelet is evidently running somewhere. Once we have
	// terminated the instance ourselves, step 7 sees it through.
	if !isReady(node) && node.Spec.ProviderID != "" && !instanceTerminating(nodeClaim) {
		_, err := c.cloudProvider.Get(ctx, node.Spec.ProviderID)
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			log.FromContext(ctx).V(0).Info("Instance of NotReady Node is gone, not draining")
			return reconcile.Result{}, c.removeFinalizer(ctx, node)
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("getting instance %q: %w", node.Spec.ProviderID, err)
		}
	}

	// 4. Keep new pods off the node and take it out of load balancers.
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}

	// 5. Drain.
	now := c.clock.Now()
	deadline, err := terminationTime(nodeClaim)
	if err != nil {
		log.FromContext(ctx).Error(err, "Reading the termination deadline, using deletion time plus terminationGracePeriod")
	}
	if deadline != nil {
		c.recorder.Publish(terminationGracePeriodExpiringEvent(node, node.Name, *deadline))
	}
	if result, err := c.drain(ctx, node, nodeClaim, now, deadline); err != nil || !result.IsZero() {
		return result, err
	}

	// 6. Wait for the volumes of drained pods to detach, so that they can
	// attach elsewhere, unless the termination grace period has elapsed.
	if result, err := c.awaitVolumeDetachment(ctx, node, nodeClaim, now, deadline); err != nil || !result.IsZero() {
		return result, err
	}

	// 7. Terminate the instance and wait until the provider reports it gone.
	stub := nodeClaim == nil
	if stub {
		nodeClaim = &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels}, Status: v1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: node.Name}}
	}
	if node.Spec.ProviderID != "" {
		gone, err := terminateInstance(ctx, c.kubeClient, c.cloudProvider, c.recorder, now, nodeClaim, !stub)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !gone {
			return reconcile.Result{RequeueAfter: instanceRecheck}, nil
		}
	}

	// 8. Let the Node go.
	return reconcile.Result{}, c.removeFinalizer(ctx, node)
}

// nodeClaimOf returns the node's NodeClaim, or nil if it has none (someone
// removed the claim's finalizer by hand; the node is still drained and its
// instance terminated).
func (c *NodeController) nodeClaimOf(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	nodeClaims, err := nodeClaimsFor(ctx, c.kubeClient, node.Spec.ProviderID)
	if err != nil {
		return nil, err
	}
	switch len(nodeClaims) {
	case 0:
		log.FromContext(ctx).V(1).Info("Node has no NodeClaim, terminating it by provider ID", "providerID", node.Spec.ProviderID)
		return nil, nil
	case 1:
		return nodeClaims[0], nil
	default:
		return nil, reconcile.TerminalError(fmt.Errorf("provider ID %q of node matches %d nodeclaims, expected one", node.Spec.ProviderID, len(nodeClaims)))
	}
}

// instanceTerminating reports whether termination already deleted the instance.
func instanceTerminating(nodeClaim *v1.NodeClaim) bool {
	return nodeClaim != nil && meta.IsStatusConditionTrue(nodeClaim.Status.Conditions, v1.ConditionTypeInstanceTerminating)
}

func isReady(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// taint adds karpenter.sh/disrupted:NoSchedule, replacing a taint of the
// same key with another effect or value, and labels the node to be excluded
// from external load balancers while it drains.
func (c *NodeController) taint(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	taint := v1.DisruptedNoScheduleTaint()
	if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == taint.Key && t.Effect == taint.Effect && t.Value == taint.Value
	}) {
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taint.Key })
		node.Spec.Taints = append(node.Spec.Taints, taint)
	}
	if _, ok := node.Labels[corev1.LabelNodeExcludeBalancers]; !ok {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[corev1.LabelNodeExcludeBalancers] = excludeFromLoadBalancersValue
	}
	if equality.Semantic.DeepEqual(stored, node) {
		return nil
	}
	log.FromContext(ctx).V(0).Info("Tainting Node", "taint", taint.ToString())
	// Taints are an atomic list: lock so that a concurrent change is not lost.
	if err := c.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node: %w", err)
	}
	return nil
}

// drain carries out one step of the drain plan. It returns a zero result
// once the node is drained.
func (c *NodeController) drain(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, now time.Time, deadline *time.Time) (reconcile.Result, error) {
	pods, err := podsOn(ctx, c.kubeClient, node.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan := drain.NewPlan(pods, now, deadline)
	reason := disruptionReason(nodeClaim)

	// a. Pods whose grace period would outlast the node are deleted now, so
	// they get as much of it as the deadline allows.
	for _, d := range plan.Delete {
		log.FromContext(ctx).V(1).Info("Deleting pod before the termination deadline", "Pod", klog.KObj(d.Pod),
			"gracePeriodSeconds", d.GracePeriodSeconds, "terminationTime", deadline.UTC().Format(time.RFC3339))
		err := c.kubeClient.Delete(ctx, d.Pod, client.GracePeriodSeconds(d.GracePeriodSeconds), client.Preconditions{UID: &d.Pod.UID})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return reconcile.Result{}, fmt.Errorf("deleting pod %s: %w", klog.KObj(d.Pod), err)
		}
		if err != nil {
			continue // gone, or replaced by a pod of the same name
		}
		c.recorder.Publish(podDisruptedEvent(d.Pod, d.GracePeriodSeconds, *deadline))
		if !drain.IsTerminating(d.Pod) {
			c.metrics.PodsDrained.WithLabelValues(reason).Inc()
		}
	}

	// b. The current group is evicted through the queue, which honours PDBs.
	c.evictionQueue.Add(node, reason, plan.Evict...)

	if !plan.Drained() {
		c.recorder.Publish(failedDrainingEvent(node, plan))
		if nodeClaim != nil {
			if _, err := setCondition(ctx, c.kubeClient, now, nodeClaim, metav1.Condition{
				Type: v1.ConditionTypeDrained, Status: metav1.ConditionUnknown, Reason: ReasonDraining, Message: drainingMessage(plan),
			}); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
		}
		wait := drainRecheck
		if !plan.NextCheck.IsZero() {
			wait = min(wait, plan.NextCheck.Sub(now))
		}
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if nodeClaim != nil {
		changed, err := setCondition(ctx, c.kubeClient, now, nodeClaim, metav1.Condition{
			Type: v1.ConditionTypeDrained, Status: metav1.ConditionTrue, Reason: ReasonDrained, Message: "All pods are evicted",
		})
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		if changed {
			log.FromContext(ctx).V(0).Info("Drained Node")
			c.metrics.NodesDrained.WithLabelValues(node.Labels[v1.NodePoolLabelKey]).Inc()
		}
	}
	return reconcile.Result{}, nil
}

// disruptionReason is why the node is being terminated, for events and metrics.
func disruptionReason(nodeClaim *v1.NodeClaim) string {
	if nodeClaim == nil {
		return forcefulTermination
	}
	if cond := meta.FindStatusCondition(nodeClaim.Status.Conditions, v1.ConditionTypeDisruptionReason); cond != nil &&
		cond.Status == metav1.ConditionTrue && cond.Reason != "" {
		return cond.Reason
	}
	return forcefulTermination
}

// awaitVolumeDetachment returns a non-zero result while volumes of drained
// pods are still attached to the node and the deadline has not passed.
func (c *NodeController) awaitVolumeDetachment(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, now time.Time, deadline *time.Time) (reconcile.Result, error) {
	pending, err := pendingVolumeAttachments(ctx, c.kubeClient, node, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	cond := metav1.Condition{Type: v1.ConditionTypeVolumesDetached, Status: metav1.ConditionTrue, Reason: ReasonVolumesDetached, Message: "All volumes are detached"}
	var result reconcile.Result
	switch {
	case len(pending) == 0:
	case deadline != nil && !now.Before(*deadline):
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonTerminationGracePeriodElapsed
		cond.Message = fmt.Sprintf("Terminating with %d volume attachments left: the termination grace period elapsed", len(pending))
	default:
		c.recorder.Publish(awaitingVolumeDetachmentEvent(node, pending))
		cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonAwaitingVolumeDetachment
		cond.Message = "Awaiting deletion of bound volumeattachments (" + volumeAttachmentNames(pending) + ")"
		result.RequeueAfter = drainRecheck
		if deadline != nil {
			result.RequeueAfter = min(result.RequeueAfter, deadline.Sub(now))
		}
	}
	if nodeClaim == nil {
		return result, nil
	}
	if _, err := setCondition(ctx, c.kubeClient, now, nodeClaim, cond); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	return result, nil
}

// removeFinalizer lets the Node go. A strategic merge patch removes just our
// entry from the finalizers, leaving other finalizers alone without a lock.
func (c *NodeController) removeFinalizer(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	if !controllerutil.RemoveFinalizer(node, v1.TerminationFinalizer) {
		return nil
	}
	if err := c.kubeClient.Patch(ctx, node, client.StrategicMergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing termination finalizer from node: %w", err))
	}
	pool := node.Labels[v1.NodePoolLabelKey]
	c.metrics.NodesTerminated.WithLabelValues(pool).Inc()
	c.metrics.NodeTerminationDuration.WithLabelValues(pool).Observe(c.clock.Since(stored.DeletionTimestamp.Time).Seconds())
	log.FromContext(ctx).V(0).Info("Removed termination finalizer from Node")
	return nil
}
