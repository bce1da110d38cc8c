package lifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// Plans tells which pods a NodeClaim was launched for (cluster state keeps
// them for the claims this process launched).
type Plans interface {
	PlannedPods(nodeClaim string) []types.NamespacedName
	HasNode(name string) bool
}

// nominate hands the scheduler Dovetail's plan (KEP-5278): each pod the
// claim was launched for, still waiting, gets status.nominatedNodeName = the
// node. The kube-scheduler then tries that node first and keeps room for the
// pod there, so pods land where the plan put them instead of wherever its
// scoring prefers, which would leave planned nodes half empty and other pods
// without room. It runs before the unregistered taint is removed, i.e.
// before the scheduler can place anything on the node. A nomination set by
// someone else (a preemption) to a node that exists is left alone. Failures
// only cost the optimisation, so they are logged, not returned.
func (c *Controller) nominate(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) {
	if c.plans == nil {
		return
	}
	nominated := 0
	for _, key := range c.plans.PlannedPods(nc.Name) {
		pod := &corev1.Pod{}
		if err := c.kubeClient.Get(ctx, key, pod); err != nil {
			continue // gone, or not in the cache yet: nothing to hint
		}
		if !podutil.IsUnschedulable(pod) || pod.Status.NominatedNodeName == node.Name {
			continue
		}
		if nnn := pod.Status.NominatedNodeName; nnn != "" && c.plans.HasNode(nnn) {
			continue
		}
		stored := pod.DeepCopy()
		pod.Status.NominatedNodeName = node.Name
		if err := c.kubeClient.Status().Patch(ctx, pod, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				log.FromContext(ctx).V(1).Info("Nominating pod", "Pod", klog.KObj(pod), "Node", klog.KObj(node), "error", err.Error())
			}
			continue
		}
		nominated++
	}
	if nominated > 0 {
		log.FromContext(ctx).V(1).Info("Nominated pods to their planned node", "NodeClaim", klog.KObj(nc), "Node", klog.KObj(node), "pods", nominated)
	}
}
