// Package readiness maintains a NodePool's NodeClassReady and Ready
// conditions. A NodePool launches nodes only while Ready: its NodeClass
// exists, is of a kind the cloud provider supports and is itself Ready, and
// the parts of the template that admission could not check are valid.
package readiness

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// Controller sets NodePool readiness.
type Controller struct {
	clock         clock.PassiveClock
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
}

// NewController returns the readiness controller.
func NewController(clk clock.PassiveClock, kubeClient client.Client, cp cloudprovider.CloudProvider) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cloudProvider: cp}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodepool.readiness" }

// Reconcile derives NodeClassReady and Ready for one NodePool.
func (c *Controller) Reconcile(ctx context.Context, np *v1.NodePool) (reconcile.Result, error) {
	stored := np.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	set := func(t string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
			ObservedGeneration: np.Generation, LastTransitionTime: now})
	}
	// 1. The NodeClass.
	status, reason, message, err := c.nodeClassReadiness(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}
	set(v1.ConditionTypeNodeClassReady, status, reason, message)
	// 2. What admission could not check.
	if problems := validate(np); len(problems) > 0 {
		set(v1.ConditionTypeReady, metav1.ConditionFalse, "ValidationFailed", strings.Join(problems, "; "))
	} else if status != metav1.ConditionTrue {
		set(v1.ConditionTypeReady, status, reason, message)
	} else {
		set(v1.ConditionTypeReady, metav1.ConditionTrue, "Ready", "")
	}
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

// nodeClassReadiness reads the referenced NodeClass and mirrors its Ready condition.
func (c *Controller) nodeClassReadiness(ctx context.Context, np *v1.NodePool) (metav1.ConditionStatus, string, string, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return metav1.ConditionFalse, "NodeClassNotFound", "spec.template.spec.nodeClassRef is not set", nil
	}
	gvk, ok := c.supported(ref)
	if !ok {
		return metav1.ConditionFalse, "UnsupportedNodeClass", fmt.Sprintf("NodeClass %s.%s is not supported by the %s cloud provider (supported: %s)",
			ref.Kind, ref.Group, c.cloudProvider.Name(), c.supportedList()), nil
	}
	nodeClass := &unstructured.Unstructured{}
	nodeClass.SetGroupVersionKind(gvk)
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.ConditionFalse, "NodeClassNotFound", fmt.Sprintf("%s %q not found", ref.Kind, ref.Name), nil
		}
		return "", "", "", fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
	}
	conditions, _, _ := unstructured.NestedSlice(nodeClass.Object, "status", "conditions")
	for _, raw := range conditions {
		c, _ := raw.(map[string]any)
		if c["type"] != "Ready" {
			continue
		}
		if c["status"] == string(metav1.ConditionTrue) {
			return metav1.ConditionTrue, "NodeClassReady", "", nil
		}
		message, _ := c["message"].(string)
		return metav1.ConditionFalse, "NodeClassNotReady", fmt.Sprintf("%s %q is not ready: %s", ref.Kind, ref.Name, message), nil
	}
	return metav1.ConditionFalse, "NodeClassNotReady", fmt.Sprintf("%s %q has no Ready condition yet", ref.Kind, ref.Name), nil
}

// supported maps a reference to a NodeClass kind the provider serves. A
// version suffix on the group ("karpenter.k8s.aws/v1") is ignored.
func (c *Controller) supported(ref *v1.NodeClassReference) (schema.GroupVersionKind, bool) {
	group, _, _ := strings.Cut(ref.Group, "/")
	for _, gvk := range c.cloudProvider.GetSupportedNodeClasses() {
		if gvk.Group == group && gvk.Kind == ref.Kind {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

func (c *Controller) supportedList() string {
	var out []string
	for _, gvk := range c.cloudProvider.GetSupportedNodeClasses() {
		out = append(out, gvk.Kind+"."+gvk.Group)
	}
	return strings.Join(out, ", ")
}

// validate checks what the CRD's CEL rules cannot afford to: label values.
func validate(np *v1.NodePool) []string {
	var problems []string
	keys := make([]string, 0, len(np.Spec.Template.ObjectMeta.Labels))
	for k := range np.Spec.Template.ObjectMeta.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, msg := range validation.IsValidLabelValue(np.Spec.Template.ObjectMeta.Labels[k]) {
			problems = append(problems, fmt.Sprintf("spec.template.metadata.labels[%s]: %s", k, msg))
		}
	}
	return problems
}

// Register watches NodePools and the supported NodeClass kinds.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).For(&v1.NodePool{})
	for _, gvk := range c.cloudProvider.GetSupportedNodeClasses() {
		nodeClass := &unstructured.Unstructured{}
		nodeClass.SetGroupVersionKind(gvk)
		b = b.Watches(nodeClass, handler.EnqueueRequestsFromMapFunc(c.poolsFor(gvk)))
	}
	return b.Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}

// poolsFor maps a NodeClass to the NodePools that reference it.
func (c *Controller) poolsFor(gvk schema.GroupVersionKind) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		pools := &v1.NodePoolList{}
		if err := c.kubeClient.List(ctx, pools); err != nil {
			return nil
		}
		var requests []reconcile.Request
		for i := range pools.Items {
			ref := pools.Items[i].Spec.Template.Spec.NodeClassRef
			if ref == nil || ref.Name != obj.GetName() || ref.Kind != gvk.Kind {
				continue
			}
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pools.Items[i])})
		}
		return requests
	}
}
