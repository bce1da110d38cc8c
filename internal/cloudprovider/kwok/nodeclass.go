package kwok

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
)

// Reasons of the KWOKNodeClass Ready condition.
const (
	// ReasonReady says the class can be used.
	ReasonReady = "Ready"
	// ReasonInvalidNodeRegistrationDelay says spec.nodeRegistrationDelay is negative.
	ReasonInvalidNodeRegistrationDelay = "InvalidNodeRegistrationDelay"
)

// NodeClassController keeps the Ready condition of every KWOKNodeClass: True
// when its spec is valid, False with a reason and message otherwise, with
// the generation it judged. Create launches only from Ready classes.
type NodeClassController struct {
	kubeClient client.Client
	clock      clock.Clock
}

// NewNodeClassController returns a controller that writes KWOKNodeClass
// status through kubeClient and stamps condition transitions with clk.
func NewNodeClassController(kubeClient client.Client, clk clock.Clock) *NodeClassController {
	return &NodeClassController{kubeClient: kubeClient, clock: clk}
}

// Name names the controller in logs and metrics.
func (c *NodeClassController) Name() string { return "kwok.nodeclass.status" }

// Register adds the controller to the manager; it watches KWOKNodeClasses.
func (c *NodeClassController) Register(_ context.Context, mgr manager.Manager) error {
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&kwokv1alpha1.KWOKNodeClass{}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("registering controller %s: %w", c.Name(), err)
	}
	return nil
}

// Reconcile sets the class's Ready condition from its spec, writing status
// only when the condition changes.
func (c *NodeClassController) Reconcile(ctx context.Context, nodeClass *kwokv1alpha1.KWOKNodeClass) (reconcile.Result, error) {
	if nodeClass.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	ready := metav1.Condition{
		Type:               kwokv1alpha1.ConditionTypeReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonReady,
		ObservedGeneration: nodeClass.Generation,
		LastTransitionTime: metav1.NewTime(c.clock.Now()),
	}
	if reason, message := validateNodeClass(&nodeClass.Spec); reason != "" {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, reason, message
	}
	patched := nodeClass.DeepCopy()
	// SetStatusCondition keeps the old transition time when the status is unchanged.
	meta.SetStatusCondition(&patched.Status.Conditions, ready)
	if equality.Semantic.DeepEqual(nodeClass.Status, patched.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, patched, client.MergeFromWithOptions(nodeClass, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching status of KWOKNodeClass %s: %w", nodeClass.Name, err))
	}
	log.FromContext(ctx).V(1).Info("Updated KWOKNodeClass readiness", "KWOKNodeClass", klog.KObj(nodeClass),
		"status", ready.Status, "reason", ready.Reason)
	return reconcile.Result{}, nil
}

// validateNodeClass returns the reason and message of the first problem in
// the spec, or "" if it is valid. The CRD already rejects most bad input;
// this catches what its pattern cannot express.
func validateNodeClass(spec *kwokv1alpha1.KWOKNodeClassSpec) (reason, message string) {
	if d := spec.NodeRegistrationDelay; d != nil && d.Duration < 0 {
		return ReasonInvalidNodeRegistrationDelay, fmt.Sprintf("spec.nodeRegistrationDelay must not be negative, got %s", d.Duration)
	}
	return "", ""
}
