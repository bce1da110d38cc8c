package disruptionstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// PodEventDedupe is the least time between two writes of a claim's
// lastPodEventTime, as in Karpenter.
const PodEventDedupe = 10 * time.Second

// PodEventsController stamps NodeClaim status.lastPodEventTime when a pod
// arrives on or leaves the claim's node. Its work items are node names.
type PodEventsController struct {
	clock      clock.Clock
	kubeClient client.Client
}

// NewPodEventsController returns the pod-events controller.
func NewPodEventsController(clk clock.Clock, kubeClient client.Client) *PodEventsController {
	return &PodEventsController{clock: clk, kubeClient: kubeClient}
}

// Name identifies the controller.
func (c *PodEventsController) Name() string { return "nodeclaim.podevents" }

// Register watches pods and enqueues the node of each pod event that
// matters for consolidateAfter. Pods seen when the cache starts (creates)
// are not events: a restart must not restart every node's timer.
func (c *PodEventsController) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, handler.TypedFuncs[*corev1.Pod, reconcile.Request]{
			UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if node := PodEventNode(e.ObjectOld, e.ObjectNew); node != "" {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
				}
			},
			DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if node := PodEventNode(e.Object, nil); node != "" {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
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

// PodEventNode names the node whose pods changed, for an update from old
// to updated (updated nil: old was deleted), or "" when nothing that
// consolidation cares about happened: a non-daemonset pod was bound,
// finished, started terminating, or was deleted while still running.
func PodEventNode(old, updated *corev1.Pod) string {
	if podutil.IsOwnedByDaemonSet(old) || podutil.IsMirror(old) {
		return ""
	}
	if updated == nil {
		if old.Spec.NodeName != "" && !podutil.IsTerminal(old) && old.DeletionTimestamp == nil {
			return old.Spec.NodeName
		}
		return ""
	}
	switch {
	case updated.Spec.NodeName == "":
		return ""
	case old.Spec.NodeName == "":
		return updated.Spec.NodeName // bound
	case !podutil.IsTerminal(old) && podutil.IsTerminal(updated):
		return updated.Spec.NodeName // finished
	case old.DeletionTimestamp == nil && updated.DeletionTimestamp != nil:
		return updated.Spec.NodeName // terminating
	}
	return ""
}

// Reconcile stamps the node's NodeClaim with the time of the pod event.
func (c *PodEventsController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// 1. Find the node's NodeClaim; unmanaged nodes have none. Both are
	// read in place, not copied: this runs on every pod event, and a claim
	// carries its instance-type list (up to 600 values).
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, node, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading node: %w", err)
	}
	if node.Spec.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of node: %w", err)
	}
	now := c.clock.Now()
	for i := range claims.Items {
		nc := &claims.Items[i]
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		// 2. Within the dedupe window of the last write, write again when it
		// ends (with that later time), never earlier than the event.
		if last := nc.Status.LastPodEventTime.Time; !last.IsZero() {
			if since := now.Sub(last); since < PodEventDedupe {
				return reconcile.Result{RequeueAfter: PodEventDedupe - since}, nil
			}
		}
		// 3. Stamp the claim.
		patch, err := LastPodEventTimePatch(now)
		if err != nil {
			return reconcile.Result{}, err
		}
		target := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
		if err := c.kubeClient.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("stamping lastPodEventTime: %w", err))
		}
	}
	return reconcile.Result{}, nil
}

// LastPodEventTimePatch is the merge patch that stamps a claim's
// lastPodEventTime. It names that one field, so it cannot undo another
// writer's change, and it is not locked to the version read: in a
// scale-out the lifecycle controller writes a claim while its pods bind,
// and a locked stamp lost three races in four (each a request, and a
// second's wait after it). A claim is found through its node's provider
// ID and named with a random suffix, so the stamp cannot reach a claim
// created again under the same name for another instance.
func LastPodEventTimePatch(now time.Time) ([]byte, error) {
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"lastPodEventTime": metav1.NewTime(now)},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the lastPodEventTime patch: %w", err)
	}
	return patch, nil
}
