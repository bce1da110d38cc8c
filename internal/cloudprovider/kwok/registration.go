package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// RegistrationController hands a launched Node to kwok once its registration
// delay has passed: it adds the kwok annotation, and kwok makes the Node
// Ready (replacing the Ready=False condition it was launched with). The
// time lives in the Node's RegisterAfterAnnotationKey annotation, so a
// restarted controller picks up where the old one stopped. It serves every
// partition.
type RegistrationController struct {
	kubeClient client.Client
	clock      clock.Clock
}

// NewRegistrationController returns a registration controller that patches
// Nodes through kubeClient and tells time by clk.
func NewRegistrationController(kubeClient client.Client, clk clock.Clock) *RegistrationController {
	return &RegistrationController{kubeClient: kubeClient, clock: clk}
}

// Name names the controller in logs and metrics.
func (c *RegistrationController) Name() string { return "kwok.registration" }

// Register adds the controller to the manager. It watches the Nodes that
// carry RegisterAfterAnnotationKey and are not handed to kwok yet.
func (c *RegistrationController) Register(_ context.Context, mgr manager.Manager) error {
	pending := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, delayed := o.GetAnnotations()[RegisterAfterAnnotationKey]
		return delayed && !handedToKwok(o)
	})
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(pending)).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("registering controller %s: %w", c.Name(), err)
	}
	return nil
}

// Reconcile hands the Node to kwok if its time has come, and otherwise asks
// to be called again when it will have.
func (c *RegistrationController) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	// 1. Only delayed Nodes that are not handed over yet, and not being deleted.
	value, delayed := node.Annotations[RegisterAfterAnnotationKey]
	if !delayed || handedToKwok(node) || node.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("Node", klog.KObj(node))
	// 2. Not yet: come back when it is time. An unreadable time (the
	// provider wrote it, so someone edited it) registers at once rather than
	// stranding the Node.
	registerAfter, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		logger.Error(err, "Registering node now: cannot read its registration time", "annotation", RegisterAfterAnnotationKey, "value", value)
	} else if wait := registerAfter.Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// 3. Hand it over: kwok manages annotated Nodes and makes them Ready.
	patched := node.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[KwokNodeAnnotationKey] = KwokNodeAnnotationValue
	if err := c.kubeClient.Patch(ctx, patched, client.MergeFrom(node)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("handing node %s to kwok: %w", node.Name, err))
	}
	logger.V(1).Info("Registered node with kwok", "register-after", value)
	return reconcile.Result{}, nil
}

// handedToKwok reports whether kwok manages the Node.
func handedToKwok(o client.Object) bool {
	return o.GetAnnotations()[KwokNodeAnnotationKey] == KwokNodeAnnotationValue
}
