package state

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/daemonset"
)

// UpdateDaemonSetPod records pod as its DaemonSet's pod when a DaemonSet
// controls it and it is not older than the one recorded: the newest pod
// carries the DaemonSet's current template as admission left it. Pods of no
// DaemonSet are ignored. Only informers call it.
func (c *Cluster) UpdateDaemonSetPod(pod *corev1.Pod) {
	namespace, name, ok := daemonset.OwnerKey(pod)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.daemonSetPods[key]; ok && cur.UID != pod.UID && pod.CreationTimestamp.Before(&cur.CreationTimestamp) {
		return
	}
	c.daemonSetPods[key] = pod
}

// UpdateLimitRange records a LimitRange. Only informers call it.
func (c *Cluster) UpdateLimitRange(lr *corev1.LimitRange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limitRanges[client.ObjectKeyFromObject(lr)] = lr
}

// DeleteLimitRange forgets a LimitRange. Only informers call it.
func (c *Cluster) DeleteLimitRange(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.limitRanges, key)
}
