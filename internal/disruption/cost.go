package disruption

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// podDeletionCostAnnotation is the ReplicaSet controller's hint of how
// costly deleting a pod is.
const podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// EvictionCost is how costly it is to evict a pod: 1, plus its deletion
// cost scaled by 2^27 and its priority scaled by 2^25, clamped to [-10, 10]
// (Karpenter's formula, so that the order of candidates carries over).
func EvictionCost(pod *corev1.Pod) float64 {
	cost := 1.0
	if v, ok := pod.Annotations[podDeletionCostAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			cost += float64(n) / (1 << 27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / (1 << 25)
	}
	return min(max(cost, -10), 10)
}

// RescheduleCost is 1 plus the positive eviction costs of the pods.
func RescheduleCost(pods []*corev1.Pod) float64 {
	cost := 1.0
	for _, pod := range pods {
		cost += max(EvictionCost(pod), 0)
	}
	return cost
}

// LifetimeRemaining is the fraction of a NodeClaim's expireAfter still
// ahead of it at now, in [0, 1]; 1 when it never expires. A node about to
// expire is cheap to disrupt: it goes soon anyway.
func LifetimeRemaining(nc *v1.NodeClaim, now time.Time) float64 {
	expireAfter := nc.Spec.ExpireAfter
	if expireAfter.IsNever() || *expireAfter.Duration <= 0 {
		return 1
	}
	age := now.Sub(nc.CreationTimestamp.Time)
	return min(max(1-float64(age)/float64(*expireAfter.Duration), 0), 1)
}

// DisruptionCost orders candidates: RescheduleCost of the pods to move
// times the lifetime remaining.
func DisruptionCost(nc *v1.NodeClaim, pods []*corev1.Pod, now time.Time) float64 {
	return RescheduleCost(pods) * LifetimeRemaining(nc, now)
}
