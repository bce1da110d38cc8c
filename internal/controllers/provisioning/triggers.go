package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// PodTrigger starts a provisioning batch when a pod becomes provisionable.
type PodTrigger struct {
	provisioner *Provisioner
	reader      client.Reader
}

// NewPodTrigger returns the pod trigger of a provisioner.
func NewPodTrigger(p *Provisioner) *PodTrigger { return &PodTrigger{provisioner: p} }

// Name identifies the controller.
func (t *PodTrigger) Name() string { return "provisioner.trigger.pod" }

// Reconcile triggers a batch for an unschedulable pod.
func (t *PodTrigger) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := t.reader.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading pod: %w", err)
	}
	if podutil.IsProvisionable(pod) {
		t.provisioner.Trigger()
	}
	return reconcile.Result{}, nil
}

// Register watches pods.
func (t *PodTrigger) Register(_ context.Context, mgr manager.Manager) error {
	t.reader = mgr.GetClient()
	return builder.ControllerManagedBy(mgr).Named(t.Name()).For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).Complete(t)
}

// NodeTrigger starts a batch when a node starts being disrupted, so that
// replacement capacity for its pods launches while it drains.
type NodeTrigger struct {
	provisioner *Provisioner
	reader      client.Reader
}

// NewNodeTrigger returns the node trigger of a provisioner.
func NewNodeTrigger(p *Provisioner) *NodeTrigger { return &NodeTrigger{provisioner: p} }

// Name identifies the controller.
func (t *NodeTrigger) Name() string { return "provisioner.trigger.node" }

// Reconcile triggers a batch for a node carrying the disrupted taint.
func (t *NodeTrigger) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := t.reader.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading node: %w", err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == v1.DisruptedTaintKey {
			t.provisioner.Trigger()
			break
		}
	}
	return reconcile.Result{}, nil
}

// Register watches nodes.
func (t *NodeTrigger) Register(_ context.Context, mgr manager.Manager) error {
	t.reader = mgr.GetClient()
	return builder.ControllerManagedBy(mgr).Named(t.Name()).For(&corev1.Node{}).Complete(t)
}

// Name identifies the provisioner.
func (p *Provisioner) Name() string { return "provisioner" }

// Register adds the provisioning loop to the manager.
func (p *Provisioner) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(p)
}
