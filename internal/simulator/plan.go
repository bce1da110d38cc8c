package simulator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Plan is the outcome of a solve: where each pod goes, which NodeClaims to
// create, and why the rest cannot be placed. Every slice is in a deterministic
// order: placements and unschedulable pods in the order pods were tried,
// NodeClaims in the order they were opened.
type Plan struct {
	// Placements are pods nominated to existing or in-flight nodes.
	Placements []Placement
	// NewNodeClaims are the nodes to launch, each with the pods it is for.
	NewNodeClaims []*NewNodeClaim
	// Unschedulable are pods that fit nowhere, with the reason.
	Unschedulable []Unschedulable
	// Sequence is every placed pod (of Placements and NewNodeClaims) in the
	// order the solve placed it. Binding the pods in this order, each to its
	// planned node, meets every pod's topology constraints at the moment it
	// binds; a replay that checks a plan against the kube-scheduler uses it.
	Sequence []*corev1.Pod
}

// Placement nominates a pod to an existing or in-flight node.
type Placement struct {
	Pod  *corev1.Pod
	Node string
}

// Unschedulable is a pod the plan could not place. Reason names the
// constraints that failed, per NodePool and for the existing nodes, for
// example "nodepool gpu: incompatible requirements: karpenter.k8s.aws/instance-category
// In [g p] conflicts with karpenter.k8s.aws/instance-category In [c] (pod
// nodeSelector)".
type Unschedulable struct {
	Pod    *corev1.Pod
	Reason string
}

// NewNodeClaim is a node to launch.
type NewNodeClaim struct {
	// NodePool the claim comes from.
	NodePool string
	// Requirements of the claim: the NodePool's, narrowed by the pods (node
	// selectors, affinities, volume zones, topology domains), with
	// node.kubernetes.io/instance-type In the options, and the zones and
	// capacity types those options are offered in. NodePool minValues are kept.
	Requirements requirements.Requirements
	// InstanceTypes are the types that fit all the pods (plus daemonsets) and
	// have an available offering the requirements allow, cheapest first (by
	// that offering's price, then name), at most Options.MaxInstanceTypes.
	InstanceTypes []*cloudprovider.InstanceType
	// Pods the claim is for, in placement order.
	Pods []*corev1.Pod
	// Requests is what the claim must offer: the pods' requests plus the
	// daemonset pods that will run on it.
	Requests corev1.ResourceList
	// Price is the hourly price of the cheapest option.
	Price float64
	// MinValuesRelaxed is set when MinValuesPolicy BestEffort let the claim
	// through with fewer distinct values than a minValues asks for.
	MinValuesRelaxed bool
}

// Cost is the hourly price of the NodeClaims the plan creates (their cheapest options).
func (p *Plan) Cost() float64 {
	total := 0.0
	for _, c := range p.NewNodeClaims {
		total += c.Price
	}
	return total
}
