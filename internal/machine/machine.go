package machine

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Machine is one machine as the cluster-state model sees it: a Node, a
// NodeClaim, or both once the claim's instance has registered. Values the
// model returns are copies; the Node, NodeClaim and pods they point to are
// shared and must not be modified.
type Machine struct {
	// Node is nil while the NodeClaim is in flight.
	Node *corev1.Node
	// NodeClaim is nil for nodes Dovetail does not manage.
	NodeClaim *v1.NodeClaim
	// Pods bound to the node that are not terminal.
	Pods []*corev1.Pod
	// MarkedForDeletion is set when the node or claim is being deleted, or a
	// disruption command chose it.
	MarkedForDeletion bool
	// NominatedUntil is when the latest nomination of a pod onto this node
	// expires; disruption leaves nominated nodes alone.
	NominatedUntil time.Time
}

// Name is the Node name, or the NodeClaim name while the claim is in flight.
func (n *Machine) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Name
	}
	return ""
}

// ProviderID identifies the instance, or "" before launch.
func (n *Machine) ProviderID() string {
	if n.Node != nil && n.Node.Spec.ProviderID != "" {
		return n.Node.Spec.ProviderID
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.ProviderID
	}
	return ""
}

// Managed reports whether Dovetail launched the node.
func (n *Machine) Managed() bool { return n.NodeClaim != nil }

// NodePoolName is the owning NodePool, or "".
func (n *Machine) NodePoolName() string {
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels[v1.NodePoolLabelKey]
	}
	if n.Node != nil {
		return n.Node.Labels[v1.NodePoolLabelKey]
	}
	return ""
}

// InFlight reports a NodeClaim whose Node has not registered yet.
func (n *Machine) InFlight() bool { return n.Node == nil }

// Initialized reports a node that is ready for pods: initialized by its
// NodeClaim's lifecycle, or Ready for unmanaged nodes.
func (n *Machine) Initialized() bool {
	if n.Node == nil {
		return false
	}
	if n.NodeClaim != nil {
		return n.Node.Labels[v1.NodeInitializedLabelKey] == "true"
	}
	for _, c := range n.Node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Labels are the Node's labels, or for an in-flight claim the labels it will
// have: its own plus every requirement that allows a single value.
func (n *Machine) Labels() map[string]string {
	if n.Node != nil {
		return n.Node.Labels
	}
	labels := maps.Clone(n.NodeClaim.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, r := range n.NodeClaim.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	return labels
}

// ConsolidationCandidateTaintKey marks, with the PreferNoSchedule effect,
// a node consolidation means to remove once its budgets allow: the
// kube-scheduler then prefers other nodes for new pods (the replacements of
// pods evicted from nodes being drained among them), instead of filling the
// emptiest nodes, which consolidation takes next, and moving those pods
// twice. The disruption controller is its only writer; the simulator does
// not treat it as a taint (simulator.Node.Disfavored).
const ConsolidationCandidateTaintKey = "disruption.dovetail.dev/consolidation-candidate"

// ConsolidationCandidateTaint is the taint of ConsolidationCandidateTaintKey.
func ConsolidationCandidateTaint() corev1.Taint {
	return corev1.Taint{Key: ConsolidationCandidateTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}
}

// IsConsolidationCandidateTaint reports the taint of ConsolidationCandidateTaintKey.
func IsConsolidationCandidateTaint(t corev1.Taint) bool {
	return t.Key == ConsolidationCandidateTaintKey
}

// Taints are the Node's taints, or the claim's taints and startup taints.
func (n *Machine) Taints() []corev1.Taint {
	if n.Node != nil {
		return n.Node.Spec.Taints
	}
	taints := append([]corev1.Taint{}, n.NodeClaim.Spec.Taints...)
	return append(taints, n.NodeClaim.Spec.StartupTaints...)
}

// Allocatable is what pods may use. For a claim whose instance has not been
// launched it is the claim's resource requests: the claim was made for pods
// that fit in them, and counting them keeps the next provisioning loop from
// launching a second node for the same pods.
func (n *Machine) Allocatable() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Allocatable) > 0 {
		return n.Node.Status.Allocatable
	}
	if n.NodeClaim != nil {
		if len(n.NodeClaim.Status.Allocatable) > 0 {
			return n.NodeClaim.Status.Allocatable
		}
		return n.NodeClaim.Spec.Resources.Requests
	}
	return nil
}

// Capacity is the machine's capacity, as counted against NodePool limits;
// nil before launch.
func (n *Machine) Capacity() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Capacity) > 0 {
		return n.Node.Status.Capacity
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.Capacity
	}
	return nil
}

// Deleting reports a node or claim with a deletion timestamp.
func (n *Machine) Deleting() bool {
	return (n.Node != nil && n.Node.DeletionTimestamp != nil) ||
		(n.NodeClaim != nil && n.NodeClaim.DeletionTimestamp != nil)
}
