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
// schedulable), so nominating once is not enough: this controller
// nominates a pod when its planned Node appears, and again when the
// scheduler has cleared the nomination and the node has become schedulable
// for the pod. A nomination write wakes the pod in the scheduler's queue,
// and a failed attempt clears it again, so re-nominating onto a node the
// pod cannot use yet would make the two writers loop: hence the
// schedulability check, and at most MaxRenominations per pod and node (a
// pod whose spread or affinity terms keep it off its node for now fails
// there each time).
//
// A nomination is only (re)written while the pod still fits on its node
// next to the pods bound there and the others nominated there: the
// scheduler keeps room for every nominated pod, so nominating more than a
// node holds (after a pod the plan did not expect bound there) would leave
// each nominated pod waiting on room held for the others, forever.
//
// When the hand-off of a pod to a node gives up (no room, or the scheduler
// cleared more nominations there than MaxRenominations allows, counted
// over the pod's whole wait, however often plans moved it away and back),
// the model records the refusal (Plans.RefuseHandOff) and provisioning is
// woken: it plans the pod again, never onto that node, so a pod the
// scheduler will not place where the plan put it gets room elsewhere
// (another node, or a new one) instead of waiting there forever.
//
// A pod with a DoNotSchedule topology spread constraint is nominated only
// where the kube-scheduler's spread filter admits it with the pods already
// nominated to that node counted as running there, as the scheduler counts
// them (spreadAdmits): the pods of one spread group nominated together
// beyond that would each see the others push the node's domain past
// maxSkew, none of them would bind, and their nominations would hold the
// node's room. Such a pod is left unnominated, for the scheduler to place
// where its spread allows, and is considered again when a pod binds to
// its planned node.
package handoff

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
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
	// RefuseHandOff records that a waiting pod's hand-off to a Node gave
	// up: its plan onto machine (as HandOffTarget named it) is dropped and
	// provisioning does not plan it onto the Node again.
	RefuseHandOff(pod *corev1.Pod, machine, node string)
	// OnHandOff registers a listener for newly handed-off pods.
	OnHandOff(fn func([]types.NamespacedName))
}

// Controller keeps handed-off pods nominated to their planned Node. Its
// work items are pods.
type Controller struct {
	kubeClient client.Client
	plans      Plans
	// replan wakes provisioning after a refusal, so that the pod gets a
	// plan elsewhere without waiting for another event.
	replan func()

	mu sync.Mutex
	// queue is the running controller's work queue, once it has started
	// (only the leader runs it); plans handed off before then are found by
	// the Node events that follow.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// written holds, per pod, the node this controller last nominated it
	// to and how many times it nominated it to each node: a nomination of
	// ours that a newer plan replaced is ours to move, while one another
	// writer set (a preemption, the scheduler starting a binding) to a
	// node that exists is left alone.
	written map[types.NamespacedName]written
	// unseen holds the nominations this controller wrote that its cache has
	// not delivered yet: they count in their node's room.
	unseen map[types.NamespacedName]nomination
	// nodeLocks serialise the room check and the write per node (a node
	// name picks one by hash), so that two workers do not both take the
	// last room on a node; a fixed set, however many nodes come and go.
	nodeLocks [64]sync.Mutex
}

// conflictRetry is how soon a nomination that lost a write conflict is
// tried again.
const conflictRetry = 20 * time.Millisecond

// MaxRenominations bounds how often a pod is nominated again to the same
// node after the kube-scheduler cleared the nomination, over the pod's
// whole wait; then the hand-off to that node is refused.
const MaxRenominations = 3

// written is where this controller nominated a pod (the one with that
// UID: a pod recreated under the same name starts afresh): the node it
// last nominated it to, and how many times it nominated it to each node.
type written struct {
	uid    types.UID
	node   string
	counts map[string]int
}

// nomination is a nomination this controller wrote: the node, the
// requests of its pod, and the pod's resourceVersion after the write (the
// cache has delivered the write once it holds that version or a newer one).
type nomination struct {
	node            string
	requests        corev1.ResourceList
	resourceVersion uint64
}

// NewController returns the hand-off controller. replan wakes provisioning
// (it must not block); nil when nothing is to be woken.
func NewController(kubeClient client.Client, plans Plans, replan func()) *Controller {
	if replan == nil {
		replan = func() {}
	}
	return &Controller{kubeClient: kubeClient, plans: plans, replan: replan, written: map[types.NamespacedName]written{},
		unseen: map[types.NamespacedName]nomination{}}
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

// enqueueNode adds the pods planned onto a Node.
func (c *Controller) enqueueNode(ctx context.Context, node *corev1.Node, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, key := range c.handedOffTo(ctx, node) {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// handedOffTo returns the handed-off pods planned onto a Node, under its
// name or its NodeClaim's (found by provider ID: on AWS the two names
// differ).
func (c *Controller) handedOffTo(ctx context.Context, node *corev1.Node) []types.NamespacedName {
	names := []string{node.Name}
	if node.Spec.ProviderID != "" {
		claims := &v1.NodeClaimList{}
		if err := c.kubeClient.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "Listing the NodeClaims of a node", "Node", klog.KObj(node))
		}
		for i := range claims.Items {
			names = append(names, claims.Items[i].Name)
		}
	}
	return c.plans.HandedOffTo(names...)
}

// NominationMayBeLost reports whether an update of a pod may call for a
// nomination to be written again or forgotten: its nomination changed (the
// kube-scheduler clears it on every failed attempt), or it was bound.
func NominationMayBeLost(old, updated *corev1.Pod) bool {
	if old.Spec.NodeName == "" && updated.Spec.NodeName != "" {
		return true
	}
	return old.Status.NominatedNodeName != updated.Status.NominatedNodeName
}

// schedulabilityChanged reports whether a Node update may change whether
// pods can be placed on it: its taints, its readiness, whether it is
// cordoned, or its allocatable (a Node is often created without it, and its
// first status write brings the room that nominations are checked against).
func schedulabilityChanged(old, updated *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, updated.Status.Allocatable) ||
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
	if !waiting(pod) {
		// Once per pod this controller nominated: forget drops the record.
		ours := c.writtenTo(pod).node != ""
		c.forget(req.NamespacedName)
		if ours && pod.Spec.NodeName != "" {
			c.bound(ctx, pod.Spec.NodeName, req.NamespacedName)
		}
		return reconcile.Result{}, nil
	}
	machine, ok := c.plans.HandOffTarget(req.NamespacedName)
	if !ok {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeOf(ctx, machine)
	if err != nil || node == nil {
		return reconcile.Result{}, err // no Node yet: its arrival brings the pod back
	}
	if !c.mayNominate(pod, node.Name) {
		return reconcile.Result{}, nil
	}
	// A nomination again, after the scheduler cleared one (or a plan moved
	// the pod away and back), only onto a node the pod can use now, and
	// not forever.
	if n := c.writtenTo(pod).counts[node.Name]; n > 0 {
		if n > MaxRenominations {
			c.refuse(ctx, pod, machine, node.Name, fmt.Sprintf("the kube-scheduler cleared %d nominations to it", n))
			return reconcile.Result{}, nil
		}
		if !schedulableFor(ctx, pod, node) {
			return reconcile.Result{}, nil
		}
	}
	requests := podRequests(pod)
	if !reported(node, requests) {
		// A Node reports its allocatable after it is created, and extended
		// resources (a device plugin's) later still: the update brings the
		// pod back, and no room is refused for what is not reported yet.
		return reconcile.Result{}, nil
	}
	lock := c.nodeLock(node.Name)
	lock.Lock()
	defer lock.Unlock()
	fits, err := c.fits(ctx, pod, requests, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !fits {
		c.refuse(ctx, pod, machine, node.Name, "the node no longer has room for it next to the pods bound and nominated there")
		return reconcile.Result{}, nil
	}
	admits, why, err := c.spreadAdmits(ctx, pod, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !admits {
		log.FromContext(ctx).V(1).Info("Not nominating pod now: its topology spread does not admit its planned node with the pods nominated there", "Pod", klog.KObj(pod), "Node", klog.KObj(node), "reason", why)
		return reconcile.Result{}, nil
	}
	if err := c.write(ctx, pod, node.Name, requests); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if apierrors.IsConflict(err) {
			// The cache is behind the pod (the scheduler writes its
			// conditions often): try again once it has caught up, as a
			// change of conditions alone does not bring the pod back.
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// bound wakes the handed-off pods planned onto the node a pod this
// controller nominated just bound to (but that pod itself, which the model
// may still list there): a spread pod left unnominated there may be
// admitted now.
func (c *Controller) bound(ctx context.Context, nodeName string, pod types.NamespacedName) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q == nil {
		return
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return // gone, or not in the cache yet: its own events bring its pods
	}
	for _, key := range c.handedOffTo(ctx, node) {
		if key != pod {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
}

// NominatePlanned nominates the handed-off pods planned onto a Node that
// is registering (under its name or its NodeClaim's), before the Node is
// released to the scheduler: registration calls it just before removing
// the unregistered taint, so that when the scheduler first sees the node
// schedulable, the pods planned there hold its room and the pods planned
// onto nodes not yet up cannot take it. Nothing is bound to the node yet,
// so the plan fits by construction. Failures only cost the optimisation,
// so they are logged, not returned; the Node's events retry.
func (c *Controller) NominatePlanned(ctx context.Context, node *corev1.Node, claim string) {
	nominated := 0
	for _, key := range c.plans.HandedOffTo(node.Name, claim) {
		pod := &corev1.Pod{}
		if err := c.kubeClient.Get(ctx, key, pod); err != nil {
			continue // gone, or not in the cache yet
		}
		if !waiting(pod) || !c.mayNominate(pod, node.Name) {
			continue
		}
		if c.nominateAtRegistration(ctx, pod, node) {
			nominated++
		}
	}
	if nominated > 0 {
		log.FromContext(ctx).V(1).Info("Nominated pods to their planned node at registration", "Node", klog.KObj(node), "NodeClaim", claim, "pods", nominated)
	}
}

// nominateAtRegistration nominates one planned pod to a registering node,
// under the node's lock, if its topology spread admits the node with the
// pods nominated there so far; it reports whether it wrote.
func (c *Controller) nominateAtRegistration(ctx context.Context, pod *corev1.Pod, node *corev1.Node) bool {
	lock := c.nodeLock(node.Name)
	lock.Lock()
	defer lock.Unlock()
	admits, _, err := c.spreadAdmits(ctx, pod, node)
	if err != nil || !admits {
		return false
	}
	if err := c.write(ctx, pod, node.Name, podRequests(pod)); err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("Nominating pod at registration", "Pod", klog.KObj(pod), "Node", klog.KObj(node), "error", err.Error())
		}
		return false
	}
	return true
}

// write nominates pod to node and records the nomination as this
// controller's.
func (c *Controller) write(ctx context.Context, pod *corev1.Pod, node string, requests corev1.ResourceList) error {
	key := client.ObjectKeyFromObject(pod)
	previous := pod.Status.NominatedNodeName
	stored := pod.DeepCopy()
	pod.Status.NominatedNodeName = node
	if err := c.kubeClient.Status().Patch(ctx, pod, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("nominating pod %s to node %s: %w", key, node, err)
	}
	c.mu.Lock()
	w := c.written[key]
	if w.uid != pod.UID || w.counts == nil {
		w = written{uid: pod.UID, counts: map[string]int{}}
	}
	w.node = node
	w.counts[node]++
	c.written[key] = w
	if rv, err := strconv.ParseUint(pod.ResourceVersion, 10, 64); err == nil {
		c.unseen[key] = nomination{node: node, requests: requests, resourceVersion: rv}
	}
	c.mu.Unlock()
	log.FromContext(ctx).V(1).Info("Nominated pod to its planned node", "Pod", klog.KObj(pod), "Node", node, "previous", previous)
	return nil
}

// refuse gives up the hand-off of a pod to node (of machine, as
// HandOffTarget named it): the model drops its plan and keeps provisioning
// from planning it there again, and provisioning is woken to plan it
// elsewhere.
func (c *Controller) refuse(ctx context.Context, pod *corev1.Pod, machine, node, why string) {
	c.plans.RefuseHandOff(pod, machine, node)
	log.FromContext(ctx).Info("Planning pod elsewhere: gave up handing it to its planned node", "Pod", klog.KObj(pod), "Node", node, "reason", why)
	c.replan()
}

// schedulableFor reports whether the kube-scheduler could place the pod on
// node now, as far as the node's state goes: Ready, not cordoned, and no
// NoSchedule or NoExecute taint the pod does not tolerate (the unregistered
// and startup taints among them).
func schedulableFor(ctx context.Context, pod *corev1.Pod, node *corev1.Node) bool {
	if node.Spec.Unschedulable || nodeReady(node) != corev1.ConditionTrue {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(log.FromContext(ctx), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true)
	return !untolerated
}

// reported reports whether the node's allocatable names every resource
// the pod requests.
func reported(node *corev1.Node, requests corev1.ResourceList) bool {
	for name, q := range requests {
		if _, ok := node.Status.Allocatable[name]; !ok && !q.IsZero() {
			return false
		}
	}
	return true
}

// podRequests is what a pod takes of a node's allocatable, pod slot
// included.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return requests
}

// fits reports whether a pod with these requests fits on node next to the
// pods bound there, the other pods nominated there, and the nominations
// this controller wrote there that the cache has not shown yet: the room
// the kube-scheduler will find when it tries the node. Callers hold the
// node's lock.
func (c *Controller) fits(ctx context.Context, pod *corev1.Pod, requests corev1.ResourceList, node *corev1.Node) (bool, error) {
	used := corev1.ResourceList{}
	counted := map[types.NamespacedName]bool{client.ObjectKeyFromObject(pod): true}
	count := func(key types.NamespacedName, r corev1.ResourceList) {
		if counted[key] {
			return
		}
		counted[key] = true
		for name, q := range r {
			total := used[name]
			total.Add(q)
			used[name] = total
		}
	}
	for _, field := range []string{indexes.PodNodeName, indexes.PodNominatedNodeName} {
		pods := &corev1.PodList{}
		if err := c.kubeClient.List(ctx, pods, client.MatchingFields{field: node.Name}); err != nil {
			return false, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if podutil.IsTerminal(p) || (field == indexes.PodNominatedNodeName && (p.Spec.NodeName != "" || p.DeletionTimestamp != nil)) {
				continue
			}
			count(client.ObjectKeyFromObject(p), podRequests(p))
		}
	}
	for key, n := range c.unseenOn(node.Name) {
		if counted[key] {
			continue
		}
		cached := &corev1.Pod{}
		if err := c.kubeClient.Get(ctx, key, cached); err != nil {
			if !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("reading pod %s: %w", key, err)
			}
			c.forgetUnseen(key, n)
			continue
		}
		if rv, err := strconv.ParseUint(cached.ResourceVersion, 10, 64); err != nil || rv >= n.resourceVersion {
			c.forgetUnseen(key, n) // delivered: the lists above counted it if it still holds
			continue
		}
		count(key, n.requests)
	}
	for name, want := range requests {
		if want.IsZero() {
			continue
		}
		free := node.Status.Allocatable[name]
		free.Sub(used[name])
		if free.Cmp(want) < 0 {
			return false, nil
		}
	}
	return true, nil
}

func (c *Controller) nodeLock(node string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return &c.nodeLocks[h.Sum32()%uint32(len(c.nodeLocks))]
}

// nodeOf finds the Node of a machine named by a Node or NodeClaim name, or
// nil when it has none yet.
func (c *Controller) nodeOf(ctx context.Context, machine string) (*corev1.Node, error) {
	node := &corev1.Node{}
	err := c.kubeClient.Get(ctx, client.ObjectKey{Name: machine}, node)
	if err == nil {
		return node, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading node %s: %w", machine, err)
	}
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: machine}, nc); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("reading nodeclaim %s: %w", machine, err))
	}
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes, client.MatchingFields{indexes.NodeProviderID: nc.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing the node of nodeclaim %s: %w", machine, err)
	}
	if len(nodes.Items) != 1 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}

// unseenOn returns the nominations to node the cache has not delivered.
func (c *Controller) unseenOn(node string) map[types.NamespacedName]nomination {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[types.NamespacedName]nomination{}
	for key, n := range c.unseen {
		if n.node == node {
			out[key] = n
		}
	}
	return out
}

// forgetUnseen drops an unseen nomination, unless a newer write replaced it.
func (c *Controller) forgetUnseen(key types.NamespacedName, n nomination) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unseen[key].resourceVersion == n.resourceVersion {
		delete(c.unseen, key)
	}
}

// writtenTo returns where this controller nominated the pod (nothing for
// an older pod of the same name).
func (c *Controller) writtenTo(pod *corev1.Pod) written {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.written[client.ObjectKeyFromObject(pod)]; w.uid == pod.UID {
		return w
	}
	return written{}
}

// waiting reports whether the pod still waits to be bound.
func waiting(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && !podutil.IsTerminal(pod)
}

// mayNominate reports whether a waiting pod's nomination is to be written
// to node: it is not there already, and it is not one another writer made
// to a node that exists (ours, from an older plan, may be moved).
func (c *Controller) mayNominate(pod *corev1.Pod, node string) bool {
	current := pod.Status.NominatedNodeName
	if current == node {
		return false
	}
	return current == "" || current == c.writtenTo(pod).node || !c.plans.HasNode(current)
}

func (c *Controller) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, key)
	delete(c.unseen, key)
}
