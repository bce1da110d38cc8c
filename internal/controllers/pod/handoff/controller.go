// Package handoff hands Dovetail's provisioning plan to the kube-scheduler
// (KEP-5278): each pod a pass planned onto a machine, and handed off,
// carries status.nominatedNodeName = that machine's Node for as long as it
// waits. The kube-scheduler tries a pod's nominated node first and keeps
// room for nominated pods there when it places others, so pods land where
// the plan put them instead of where its scoring prefers, which would leave
// planned nodes half empty and other pods without room (and provisioning
// launching again for them).
//
// The kube-scheduler clears a pod's nomination each time it fails to place
// the pod (as it will, for every node event, until the planned node is
// schedulable), so nominating once is not enough: this controller sets the
// nomination again whenever it is cleared. A status-only change does not
// wake the pod in the scheduler's queue, so the two writers do not loop.
package handoff

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// Plans is what the controller reads of provisioning's intent (the cluster
// model implements it).
type Plans interface {
	// HandOffTarget names the machine (a Node's or a NodeClaim's name) a
	// handed-off pod is planned onto.
	HandOffTarget(pod types.NamespacedName) (machine string, ok bool)
	// HandedOffTo lists the handed-off pods planned onto a machine under
	// any of these names.
	HandedOffTo(names ...string) []types.NamespacedName
	// HasNode reports whether a Node of that name is in the model.
	HasNode(name string) bool
	// OnHandOff registers a listener for newly handed-off pods.
	OnHandOff(fn func([]types.NamespacedName))
}

// Controller keeps handed-off pods nominated to their planned Node. Its
// work items are pods.
type Controller struct {
	kubeClient client.Client
	plans      Plans

	mu sync.Mutex
	// queue is the running controller's work queue, once it has started
	// (only the leader runs it); plans handed off before then are found by
	// the Node events that follow.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// ours holds, per pod, the node this controller last nominated it to: a
	// nomination of ours that a newer plan replaced is ours to move, while
	// one another writer set (a preemption, the scheduler starting a
	// binding) to a node that exists is left alone.
	ours map[types.NamespacedName]string
}

// NewController returns the hand-off controller.
func NewController(kubeClient client.Client, plans Plans) *Controller {
	return &Controller{kubeClient: kubeClient, plans: plans, ours: map[types.NamespacedName]string{}}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "pod.handoff" }

// Register watches pods whose nomination or scheduling condition changes,
// Nodes that arrive or change taints or readiness (their planned pods can
// now be nominated, or bound), and the plans provisioning hands off.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	c.plans.OnHandOff(c.enqueue)
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.queue = q
			return nil
		})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, handler.TypedFuncs[*corev1.Pod, reconcile.Request]{
			UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if NominationMayBeLost(e.ObjectOld, e.ObjectNew) {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)})
				}
			},
			DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
			},
		})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Node{}, handler.TypedFuncs[*corev1.Node, reconcile.Request]{
			CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				c.enqueueNode(ctx, e.Object, q)
			},
			UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if schedulabilityChanged(e.ObjectOld, e.ObjectNew) {
					c.enqueueNode(ctx, e.ObjectNew, q)
				}
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

// NeedLeaderElection is true: only the leader writes nominations.
func (c *Controller) NeedLeaderElection() bool { return true }

// enqueue adds newly handed-off pods to the running controller's queue.
func (c *Controller) enqueue(pods []types.NamespacedName) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q == nil {
		return
	}
	for _, key := range pods {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// enqueueNode adds the pods planned onto a Node, under its name or its
// NodeClaim's (found by provider ID: on AWS the two names differ).
func (c *Controller) enqueueNode(ctx context.Context, node *corev1.Node, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	names := []string{node.Name}
	if node.Spec.ProviderID != "" {
		claims := &v1.NodeClaimList{}
		if err := c.kubeClient.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
			log.FromContext(ctx).Error(err, "Listing the NodeClaims of a node", "Node", klog.KObj(node))
		}
		for i := range claims.Items {
			names = append(names, claims.Items[i].Name)
		}
	}
	for _, key := range c.plans.HandedOffTo(names...) {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// NominationMayBeLost reports whether an update of a pod that is still
// waiting to be bound may have left it without its planned nomination: the
// nomination changed (the kube-scheduler clears it on every failed
// attempt), or its scheduling condition did.
func NominationMayBeLost(old, updated *corev1.Pod) bool {
	if updated.Spec.NodeName != "" || updated.DeletionTimestamp != nil || podutil.IsTerminal(updated) {
		return false
	}
	if old.Status.NominatedNodeName != updated.Status.NominatedNodeName {
		return true
	}
	return !equality.Semantic.DeepEqual(scheduledCondition(old), scheduledCondition(updated))
}

func scheduledCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// schedulabilityChanged reports whether a Node update may change whether
// pods can be placed on it: its taints, its readiness or whether it is
// cordoned.
func schedulabilityChanged(old, updated *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
		old.Spec.Unschedulable != updated.Spec.Unschedulable ||
		nodeReady(old) != nodeReady(updated)
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return corev1.ConditionUnknown
}

// Reconcile nominates a waiting, handed-off pod to its planned Node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading pod: %w", err)
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || podutil.IsTerminal(pod) {
		c.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	machine, ok := c.plans.HandOffTarget(req.NamespacedName)
	if !ok {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeOf(ctx, machine)
	if err != nil || node == "" {
		return reconcile.Result{}, err // no Node yet: its arrival brings the pod back
	}
	current := pod.Status.NominatedNodeName
	if current == node || (current != "" && current != c.lastNominated(req.NamespacedName) && c.plans.HasNode(current)) {
		return reconcile.Result{}, nil
	}
	stored := pod.DeepCopy()
	pod.Status.NominatedNodeName = node
	if err := c.kubeClient.Status().Patch(ctx, pod, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// A newer pod (its update event brings it back) or none.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("nominating pod to node %s: %w", node, err)
	}
	c.mu.Lock()
	c.ours[req.NamespacedName] = node
	c.mu.Unlock()
	log.FromContext(ctx).V(1).Info("Nominated pod to its planned node", "Pod", klog.KObj(pod), "Node", node, "previous", current)
	return reconcile.Result{}, nil
}

// nodeOf finds the Node of a machine named by a Node or NodeClaim name, or
// "" when it has none yet.
func (c *Controller) nodeOf(ctx context.Context, machine string) (string, error) {
	node := &corev1.Node{}
	err := c.kubeClient.Get(ctx, client.ObjectKey{Name: machine}, node)
	if err == nil {
		return node.Name, nil
	}
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading node %s: %w", machine, err)
	}
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: machine}, nc); err != nil {
		return "", client.IgnoreNotFound(fmt.Errorf("reading nodeclaim %s: %w", machine, err))
	}
	if nc.Status.ProviderID == "" {
		return "", nil
	}
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes, client.MatchingFields{indexes.NodeProviderID: nc.Status.ProviderID}); err != nil {
		return "", fmt.Errorf("listing the node of nodeclaim %s: %w", machine, err)
	}
	if len(nodes.Items) != 1 {
		return "", nil
	}
	return nodes.Items[0].Name, nil
}

func (c *Controller) lastNominated(key types.NamespacedName) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ours[key]
}

func (c *Controller) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ours, key)
}
