package health

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
)

// MetricReason is the reason label of karpenter_nodeclaims_disrupted_total
// for repaired claims, as Karpenter names it.
const MetricReason = "unhealthy"

// BlockedRecheck is how often a node whose repair the safeguard blocks is
// looked at again: the other nodes recovering does not change this Node.
const BlockedRecheck = time.Minute

// Controller finds managed nodes that have been unhealthy for longer than
// the cloud provider's repair policies tolerate and asks the disruption
// controller to replace them (Requests).
type Controller struct {
	clock         clock.Clock
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	requests      *Requests
}

// NewController returns the node repair controller. kubeClient must be the
// manager's cached client: NodeClaims are found through the provider-ID
// index of internal/indexes. requests is the set the disruption controller
// reads; the controller is its only writer.
func NewController(clk clock.Clock, kubeClient client.Client, cloudProvider cloudprovider.CloudProvider,
	recorder events.Recorder, requests *Requests) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cloudProvider: cloudProvider, recorder: recorder, requests: requests}
}

// Name identifies the controller, as Karpenter names it.
func (c *Controller) Name() string { return "node.health" }

// Requests is the set the controller writes its repair requests to.
func (c *Controller) Requests() *Requests { return c.requests }

// Register watches Nodes that have a provider ID (those being deleted too,
// so that their requests are dropped).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.(*corev1.Node).Spec.ProviderID != ""
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			node := &corev1.Node{}
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, node); err != nil {
				if apierrors.IsNotFound(err) {
					c.requests.RemoveNode(req.Name)
				}
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			return c.Reconcile(ctx, node)
		}))
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

// Reconcile asks for the node's repair once a repair policy's toleration
// has elapsed (and the safeguard allows it), or comes back when it will
// have; a node that recovered, or is going, has its request dropped.
func (c *Controller) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	// 1. Nodes being deleted, and healthy nodes, need nothing (the common
	// case costs no list).
	if !node.DeletionTimestamp.IsZero() || node.Spec.ProviderID == "" {
		c.drop(ctx, node, "Node is being deleted")
		return reconcile.Result{}, nil
	}
	policies := c.cloudProvider.RepairPolicies()
	cond, policy, repairAt, unhealthy := UnhealthyCondition(node, policies)
	if !unhealthy {
		c.drop(ctx, node, "Node is healthy again")
		return reconcile.Result{}, nil
	}
	// 2. Only nodes Dovetail launched are repaired.
	nodeClaim, err := c.nodeClaimOf(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nodeClaim == nil || !nodeClaim.DeletionTimestamp.IsZero() {
		c.drop(ctx, node, "NodeClaim is gone or being deleted")
		return reconcile.Result{}, nil
	}
	poolName := nodeClaim.Labels[v1.NodePoolLabelKey]
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim), "NodePool", klog.KRef("", poolName)))

	// 3. Not yet: come back when the toleration ends.
	now := c.clock.Now()
	if wait := repairAt.Sub(now); wait > 0 {
		c.drop(ctx, node, "toleration not over")
		log.FromContext(ctx).V(1).Info("Node is unhealthy, waiting for the end of its toleration",
			"condition", string(cond.Type), "status", string(cond.Status), "since", cond.LastTransitionTime.UTC().Format(time.RFC3339),
			"toleration", policy.TolerationDuration.String(), "repairAt", repairAt.UTC().Format(time.RFC3339))
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	// 4. The safeguard counts the pool's nodes, or the cluster's.
	peers, err := c.peers(ctx, poolName)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := Decide(now, node, policies, peers)
	switch d.Action {
	case Repair:
	case Blocked:
		c.drop(ctx, node, "too many nodes are unhealthy")
		return reconcile.Result{RequeueAfter: BlockedRecheck}, c.blocked(ctx, node, nodeClaim, poolName, d)
	default: // the condition changed between the two reads
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}

	// 5. Repair: ask the disruption controller, which launches the
	// replacement, waits for it (or not, when it cannot), and deletes the
	// claim with no drain deadline left. Look again in a while: the
	// safeguard's count may change before the repair starts.
	req := Request{NodeClaim: nodeClaim.Name, Node: node.Name, Condition: d.Condition, Policy: d.Policy, Unhealthy: d.Unhealthy, Total: d.Total}
	if c.requests.Add(req) {
		log.FromContext(ctx).V(0).Info("Requesting the repair of unhealthy Node",
			"condition", string(d.Condition.Type), "status", string(d.Condition.Status), "since", d.Condition.LastTransitionTime.UTC().Format(time.RFC3339),
			"toleration", d.Policy.TolerationDuration.String(), "unhealthyNodes", d.Unhealthy, "nodes", d.Total)
	}
	return reconcile.Result{RequeueAfter: BlockedRecheck}, nil
}

// drop removes the node's repair request, if it has one.
func (c *Controller) drop(ctx context.Context, node *corev1.Node, why string) {
	for _, claim := range c.requests.RemoveNode(node.Name) {
		log.FromContext(ctx).V(0).Info("Dropped the repair request of Node", "Node", klog.KObj(node), "NodeClaim", klog.KRef("", claim), "why", why)
	}
}

// nodeClaimOf returns the node's NodeClaim, or nil if there is not exactly one.
func (c *Controller) nodeClaimOf(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	list := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims with provider ID %q: %w", node.Spec.ProviderID, err)
	}
	if len(list.Items) != 1 {
		if len(list.Items) > 1 {
			log.FromContext(ctx).Error(nil, "Not repairing Node: its provider ID matches several NodeClaims", "providerID", node.Spec.ProviderID, "count", len(list.Items))
		}
		return nil, nil
	}
	return &list.Items[0], nil
}

// peers are the nodes the safeguard counts: the NodePool's, or every node
// of the cluster for a claim without a NodePool.
func (c *Controller) peers(ctx context.Context, poolName string) ([]*corev1.Node, error) {
	list := &corev1.NodeList{}
	var opts []client.ListOption
	if poolName != "" {
		opts = append(opts, client.MatchingLabels{v1.NodePoolLabelKey: poolName})
	}
	if err := c.kubeClient.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing nodes of nodepool %q: %w", poolName, err)
	}
	out := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// blocked publishes why the repair waits.
func (c *Controller) blocked(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, poolName string, d Decision) error {
	var nodePool *v1.NodePool
	if poolName != "" {
		nodePool = &v1.NodePool{}
		if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: poolName}, nodePool); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("getting nodepool %s: %w", poolName, err)
			}
			nodePool = nil
		}
	}
	c.recorder.Publish(blockedEvents(node, nodeClaim, nodePool, poolName, d)...)
	log.FromContext(ctx).V(0).Info("Not repairing unhealthy Node: too many nodes are unhealthy",
		"condition", string(d.Condition.Type), "status", string(d.Condition.Status),
		"unhealthyNodes", d.Unhealthy, "nodes", d.Total, "allowedUnhealthy", d.Allowed)
	return nil
}

// AnnotateTerminationTime sets karpenter.sh/nodeclaim-termination-timestamp
// to now, unless the claim already has an earlier deadline, so that the
// drain deletes the pods of the dead node at once instead of waiting on
// evictions its kubelet cannot carry out. Termination keeps a deadline it
// finds. The disruption controller calls it just before it deletes the
// NodeClaim of a repair.
func AnnotateTerminationTime(ctx context.Context, kubeClient client.Client, nodeClaim *v1.NodeClaim, now time.Time) error {
	if value, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, value); err == nil && !t.After(now) {
			return nil
		}
	}
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	value := now.UTC().Format(time.RFC3339)
	nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = value
	// A merge patch of the one annotation, without a resourceVersion
	// lock: the claim has just been written (its DisruptionReason), so the
	// cached copy is often behind, and no other field is touched.
	if err := kubeClient.Patch(ctx, nodeClaim, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating unhealthy nodeclaim %s with its termination time: %w", nodeClaim.Name, err))
	}
	log.FromContext(ctx).V(1).Info("Annotated NodeClaim with its termination time", "NodeClaim", klog.KObj(nodeClaim), "terminationTime", value)
	return nil
}

// SnakeCase turns a condition type into the metric label Karpenter uses:
// "Ready" becomes "ready", "AcceleratedHardwareReady"
// "accelerated_hardware_ready".
func SnakeCase(s string) string {
	var b strings.Builder
	runes := []rune(s)
	for i, r := range runes {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(runes[i-1]) || (i+1 < len(runes) && unicode.IsLower(runes[i+1]) && unicode.IsUpper(runes[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
