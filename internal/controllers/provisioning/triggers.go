package provisioning

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// PodTrigger starts a provisioning batch when a pod becomes provisionable.
// Each pod triggers once, when it first becomes provisionable: later
// updates of a pod that is still pending must not keep extending the batch
// (the provisioner also re-evaluates pending pods on its own every few seconds).
type PodTrigger struct {
	provisioner *Provisioner
	reader      client.Reader

	mu      sync.Mutex
	pending map[types.NamespacedName]types.UID
}

// NewPodTrigger returns the pod trigger of a provisioner.
func NewPodTrigger(p *Provisioner) *PodTrigger {
	return &PodTrigger{provisioner: p, pending: map[types.NamespacedName]types.UID{}}
}

// Name identifies the controller.
func (t *PodTrigger) Name() string { return "provisioner.trigger.pod" }

// Reconcile triggers a batch for an unschedulable pod.
func (t *PodTrigger) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := t.reader.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			t.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading pod: %w", err)
	}
	t.observe(pod)
	return reconcile.Result{}, nil
}

// observe asks for a batch when the pod just became provisionable. With
// EarlyProvisioning, a pod a pass has already planned onto a NodeClaim
// being launched (as an untried sibling) waits for it instead, and a
// group's later pods join the batch its first opened.
func (t *PodTrigger) observe(pod *corev1.Pod) {
	if !t.firstTime(pod) {
		return
	}
	if !t.provisioner.opts.EarlyProvisioning {
		t.provisioner.Trigger()
		return
	}
	if _, planned := t.provisioner.cluster.PlannedLaunch(client.ObjectKeyFromObject(pod)); planned {
		return
	}
	if key, ok := podutil.SiblingKey(pod); ok {
		t.provisioner.batcher.TriggerGroup(key)
		return
	}
	t.provisioner.Trigger()
}

// firstTime records whether the pod is provisionable and reports whether it
// just became so. Pods are keyed by name and remembered with their UID, so a
// pod recreated under the same name counts as new.
func (t *PodTrigger) firstTime(pod *corev1.Pod) bool {
	key := client.ObjectKeyFromObject(pod)
	t.mu.Lock()
	defer t.mu.Unlock()
	uid, known := t.pending[key]
	if !podutil.IsProvisionable(pod) {
		delete(t.pending, key)
		return false
	}
	t.pending[key] = pod.UID
	return !known || uid != pod.UID
}

// forget drops a deleted pod.
func (t *PodTrigger) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, key)
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

// Register adds the provisioning loop to the manager, whose cache its
// passes read pods from.
func (p *Provisioner) Register(_ context.Context, mgr manager.Manager) error {
	p.podCache = mgr.GetCache()
	return mgr.Add(p)
}
