package testing

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// NodeWrapper builds a snapshot node.
type NodeWrapper struct{ simulator.Node }

// MakeNode returns an initialized node with its hostname label and no allocatable.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{simulator.Node{
		Name: name, Initialized: true,
		Labels: map[string]string{corev1.LabelHostname: name},
	}}
}

// Obj returns the node.
func (w *NodeWrapper) Obj() simulator.Node {
	n := w.Node
	n.Labels = map[string]string{}
	for k, v := range w.Labels {
		n.Labels[k] = v
	}
	n.Pods = append([]*corev1.Pod(nil), w.Pods...)
	return n
}

// NodePool sets the owning NodePool (and its label).
func (w *NodeWrapper) NodePool(name string) *NodeWrapper {
	w.Node.NodePool = name
	return w.Label(v1.NodePoolLabelKey, name)
}

// Label sets a label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper {
	w.Labels[k] = v
	return w
}

// Zone sets the zone label.
func (w *NodeWrapper) Zone(z string) *NodeWrapper { return w.Label(corev1.LabelTopologyZone, z) }

// Taint adds a taint.
func (w *NodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodeWrapper {
	w.Taints = append(w.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

// Alloc sets allocatable as name, quantity pairs.
func (w *NodeWrapper) Alloc(pairs ...string) *NodeWrapper {
	w.Allocatable = list(pairs)
	return w
}

// Capacity sets capacity as name, quantity pairs.
func (w *NodeWrapper) Capacity(pairs ...string) *NodeWrapper {
	w.Node.Capacity = list(pairs)
	return w
}

// Pod binds pods to the node.
func (w *NodeWrapper) Pod(pods ...*corev1.Pod) *NodeWrapper {
	for _, p := range pods {
		p.Spec.NodeName = w.Name
		w.Pods = append(w.Pods, p)
	}
	return w
}

// Disfavored marks a node consolidation means to remove.
func (w *NodeWrapper) Disfavored() *NodeWrapper {
	w.Node.Disfavored = true
	return w
}

// InFlight marks a launched NodeClaim without a Node (not initialized).
func (w *NodeWrapper) InFlight() *NodeWrapper {
	w.Node.InFlight = true
	w.Initialized = false
	return w
}

// NotInitialized marks a registered node that is not ready yet.
func (w *NodeWrapper) NotInitialized() *NodeWrapper {
	w.Initialized = false
	return w
}

// Deleting marks the node for deletion.
func (w *NodeWrapper) Deleting() *NodeWrapper {
	w.MarkedForDeletion = true
	return w
}

// Cordoned marks the node unschedulable.
func (w *NodeWrapper) Cordoned() *NodeWrapper {
	w.Unschedulable = true
	return w
}
