// Package nodeoverlay validates the cluster's NodeOverlays and reports on
// each whether it applies: ValidationSucceeded and Ready are True, or False
// with reason RuntimeValidation (a check the CRD schema cannot make failed,
// the message names the field) or Conflict (an overlay of the same weight
// changes the same price or resource; the message names it). The overlay
// decorator (internal/cloudprovider/overlay) leaves out the overlays marked
// False, so a conflict is resolved the same way on every NodePool. When the
// overlays change, the controller wakes the provisioner, so that pending
// pods are simulated against the new prices and capacity at once.
package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/overlay"
)

// The NodeOverlay permissions: read, and write the status conditions.
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays/status,verbs=get;update;patch

// Resync is how often the overlays are evaluated again without a change to
// them or the NodePools, for instance types that changed underneath
// (a NodeClass's subnets, a new capacity reservation).
const Resync = 5 * time.Minute

// key is the one request the controller reconciles: every overlay is
// evaluated against every other, so any change evaluates them all.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: "nodeoverlays"}}

// Controller evaluates the NodeOverlays; see the package documentation.
type Controller struct {
	clock         clock.PassiveClock
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	onChange      func()

	mu sync.Mutex
	// last is what the previous reconcile saw: each overlay's name,
	// generation and verdict.
	last string
}

// NewController returns the controller. cp must be the provider without the
// overlay decorator (its instance types as the cloud offers them);
// onChange (may be nil) is called when the overlays that apply changed.
func NewController(clk clock.PassiveClock, kubeClient client.Client, cp cloudprovider.CloudProvider, onChange func()) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cloudProvider: cp, onChange: onChange}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodeoverlay" }

// Reconcile evaluates every NodeOverlay against the instance types of every
// NodePool and writes each overlay's conditions.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	list := &v1alpha1.NodeOverlayList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	pools, poolErr := c.pools(ctx)
	if pools == nil && poolErr != nil {
		return reconcile.Result{}, poolErr
	}
	// 1. Runtime validation, then conflicts among the valid overlays.
	invalid := map[string]error{}
	var parsed []overlay.Overlay
	for i := range list.Items {
		no := &list.Items[i]
		if no.DeletionTimestamp != nil {
			continue
		}
		o, err := overlay.Parse(no)
		if err != nil {
			invalid[no.Name] = err
			continue
		}
		parsed = append(parsed, o)
	}
	evaluation := overlay.Evaluate(pools, parsed)
	// 2. Conditions.
	var errs []error
	var seen []string
	for i := range list.Items {
		no := &list.Items[i]
		if no.DeletionTimestamp != nil {
			continue
		}
		status, reason, message := metav1.ConditionTrue, v1alpha1.ConditionTypeValidationSucceeded, ""
		if err, ok := invalid[no.Name]; ok {
			status, reason, message = metav1.ConditionFalse, v1alpha1.ReasonRuntimeValidation, err.Error()
		} else if conflict, ok := evaluation.Conflicts[no.Name]; ok {
			status, reason, message = metav1.ConditionFalse, v1alpha1.ReasonConflict, conflict.Message()
		}
		seen = append(seen, no.Name+"@"+strconv.FormatInt(no.Generation, 10)+"="+string(status))
		if err := c.setConditions(ctx, no, status, reason, message); err != nil {
			errs = append(errs, err)
		}
	}
	// 3. Wake the provisioner when what applies changed.
	slices.Sort(seen)
	fingerprint := strings.Join(seen, ",")
	c.mu.Lock()
	changed := fingerprint != c.last
	c.last = fingerprint
	c.mu.Unlock()
	if changed {
		log.FromContext(ctx).V(1).Info("NodeOverlays changed", "applied", len(evaluation.Applied),
			"conflicting", len(evaluation.Conflicts), "invalid", len(invalid))
		if c.onChange != nil {
			c.onChange()
		}
	}
	if err := errors.Join(append(errs, poolErr)...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: Resync}, nil
}

// pools returns every NodePool with its instance types as the cloud offers
// them. A pool whose types cannot be listed is left out and reported in
// the error, and the others are still evaluated.
func (c *Controller) pools(ctx context.Context) ([]overlay.Pool, error) {
	list := &v1.NodePoolList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	pools := make([]overlay.Pool, 0, len(list.Items))
	var errs []error
	for i := range list.Items {
		np := &list.Items[i]
		its, err := c.cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing instance types of nodepool %s: %w", np.Name, err))
			continue
		}
		pools = append(pools, overlay.Pool{NodePool: np, InstanceTypes: its})
	}
	return pools, errors.Join(errs...)
}

// setConditions writes ValidationSucceeded and Ready (the same verdict)
// when they changed.
func (c *Controller) setConditions(ctx context.Context, no *v1alpha1.NodeOverlay, status metav1.ConditionStatus, reason, message string) error {
	stored := no.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	readyReason := reason
	if status == metav1.ConditionTrue {
		readyReason = v1alpha1.ConditionTypeReady
	}
	for _, cond := range []metav1.Condition{
		{Type: v1alpha1.ConditionTypeValidationSucceeded, Status: status, Reason: reason, Message: message},
		{Type: v1alpha1.ConditionTypeReady, Status: status, Reason: readyReason, Message: message},
	} {
		cond.ObservedGeneration, cond.LastTransitionTime = no.Generation, now
		meta.SetStatusCondition(&no.Status.Conditions, cond)
	}
	if equality.Semantic.DeepEqual(stored.Status, no.Status) {
		return nil
	}
	// The optimistic lock keeps a concurrent writer's conditions: the merge
	// patch replaces the whole list.
	if err := c.kubeClient.Status().Patch(ctx, no, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing the conditions of nodeoverlay %s: %w", no.Name, err)
	}
	return nil
}

// Register watches NodeOverlays and NodePools (their specs: names and
// template labels select instance types) and the provider's NodeClass
// kinds (they decide the instance types); every event evaluates all
// overlays.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	// Without the NodeOverlay CRD (Karpenter's CRDs before v1.7) there is
	// nothing to watch, and a watch on a missing kind would stop the manager.
	gvk := v1alpha1.SchemeGroupVersion.WithKind("NodeOverlay")
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			log.FromContext(ctx).Info("Not starting the nodeoverlay controller: the NodeOverlay CRD is not installed", "kind", gvk.String())
			return nil
		}
		return fmt.Errorf("looking up the NodeOverlay kind: %w", err)
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	})
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).
		Watches(&v1alpha1.NodeOverlay{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodePool{}, all, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	for _, gvk := range c.cloudProvider.GetSupportedNodeClasses() {
		nodeClass := &unstructured.Unstructured{}
		nodeClass.SetGroupVersionKind(gvk)
		b = b.Watches(nodeClass, all)
	}
	return b.Complete(c)
}
