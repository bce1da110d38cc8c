// Package pod exports the karpenter_pods_state gauge (one series per pod,
// labelled with where it runs and its phase) and the pod startup-time
// histogram, so dashboards built for Karpenter keep working.
package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// Controller keeps the pod metrics.
type Controller struct {
	kubeClient client.Client
	metrics    *metrics.Metrics

	mu      sync.Mutex
	started map[types.NamespacedName]types.UID // pods whose startup was observed
}

// NewController returns the pod metrics controller.
func NewController(kubeClient client.Client, m *metrics.Metrics) *Controller {
	return &Controller{kubeClient: kubeClient, metrics: m, started: map[types.NamespacedName]types.UID{}}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "metrics.pod" }

// Reconcile updates one pod's series.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// Read only: the cache's objects are read in place, not copied, on
	// every pod event.
	pod := &corev1.Pod{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, pod, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading pod: %w", err)
	}
	labels := metrics.PodStateLabels{metrics.PodStateName: pod.Name, metrics.PodStateNamespace: pod.Namespace, metrics.PodStateOwner: owner(pod),
		metrics.PodStateNode: pod.Spec.NodeName, metrics.PodStatePhase: string(pod.Status.Phase)}
	if pod.Spec.NodeName != "" {
		node := &corev1.Node{}
		if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node, client.UnsafeDisableDeepCopy); err == nil {
			labels[metrics.PodStateNodePool] = node.Labels[v1.NodePoolLabelKey]
			labels[metrics.PodStateZone] = node.Labels[corev1.LabelTopologyZone]
			labels[metrics.PodStateArch] = node.Labels[corev1.LabelArchStable]
			labels[metrics.PodStateCapacityType] = node.Labels[v1.CapacityTypeLabelKey]
			labels[metrics.PodStateInstanceType] = node.Labels[corev1.LabelInstanceTypeStable]
		}
	}
	c.metrics.PodsState.Set(req.NamespacedName, labels)
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod.Status.Phase == corev1.PodRunning && c.started[req.NamespacedName] != pod.UID {
		if at, ok := runningSince(pod); ok {
			c.metrics.PodStartupDuration.Observe(at.Sub(pod.CreationTimestamp.Time).Seconds())
			c.started[req.NamespacedName] = pod.UID
		}
	}
	return reconcile.Result{}, nil
}

func (c *Controller) forget(key types.NamespacedName) {
	c.metrics.PodsState.Delete(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.started, key)
}

// runningSince is when the pod became Ready, or else when it started.
func runningSince(pod *corev1.Pod) (time.Time, bool) {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time, true
		}
	}
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time, true
	}
	return time.Time{}, false
}

// Register watches pods.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).Complete(c)
}

func owner(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + "/" + ref.Name
		}
	}
	return ""
}
