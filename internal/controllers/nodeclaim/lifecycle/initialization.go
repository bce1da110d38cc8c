package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// initialize marks the node ready for pods once it is Ready, its startup
// taints are gone and every requested extended resource is registered.
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	if !isTrue(nc, v1.ConditionTypeRegistered) || isTrue(nc, v1.ConditionTypeInitialized) {
		return reconcile.Result{}, false, nil
	}
	now := metav1.NewTime(c.clock.Now())
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			setCondition(nc, now, v1.ConditionTypeInitialized, metav1.ConditionUnknown, "NodeNotFound", "Node not registered with cluster")
			return reconcile.Result{}, false, nil
		}
		return reconcile.Result{}, false, fmt.Errorf("reading node %s: %w", nc.Status.NodeName, err)
	}
	// 1. The node must be Ready.
	if !nodeReady(node) {
		setCondition(nc, now, v1.ConditionTypeInitialized, metav1.ConditionUnknown, "NodeNotReady", "Node status is NotReady")
		return reconcile.Result{}, false, nil
	}
	// 2. The startup taints must be gone.
	for _, t := range nc.Spec.StartupTaints {
		if hasTaint(node.Spec.Taints, t.Key) {
			setCondition(nc, now, v1.ConditionTypeInitialized, metav1.ConditionUnknown, "StartupTaintsExist",
				fmt.Sprintf("StartupTaint %q still exists", t.ToString()))
			return reconcile.Result{}, false, nil
		}
	}
	// 3. So must the taints every starting node carries until it is fully
	// up (not-ready lingers after Ready until the node-lifecycle controller
	// removes it): a node marked initialized is one pods can land on now.
	for _, key := range v1.KnownEphemeralTaintKeys {
		if hasTaint(node.Spec.Taints, key) {
			setCondition(nc, now, v1.ConditionTypeInitialized, metav1.ConditionUnknown, "KnownEphemeralTaintsExist",
				fmt.Sprintf("KnownEphemeralTaint %q still exists", key))
			return reconcile.Result{}, false, nil
		}
	}
	// 4. Every requested extended resource must be registered.
	for name, requested := range nc.Spec.Resources.Requests {
		if isStandardResource(name) || requested.IsZero() {
			continue
		}
		if got, ok := node.Status.Allocatable[name]; !ok || got.IsZero() {
			setCondition(nc, now, v1.ConditionTypeInitialized, metav1.ConditionUnknown, "ResourceNotRegistered",
				fmt.Sprintf("Resource %q was requested but not registered", name))
			return reconcile.Result{}, false, nil
		}
	}
	// 5. Label the node initialized.
	if node.Labels[v1.NodeInitializedLabelKey] != "true" {
		stored := node.DeepCopy()
		node.Labels = mergeMaps(node.Labels, map[string]string{v1.NodeInitializedLabelKey: "true"})
		if err := c.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	// Logged and counted once the status is written (reportTransitions).
	setCondition(nc, now, v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
	return reconcile.Result{}, false, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isStandardResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		return true
	}
	return false
}
