package simulator

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
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

// NodeClaim renders the claim as a NodeClaim of its NodePool (named by
// generateName from the pool), ready for the cloud provider: the pool
// template's labels, annotations, taints, startup taints, node class,
// expiry and termination grace period; the claim's requirements; and its
// resource requests.
func (c *NewNodeClaim) NodeClaim(pool *v1.NodePool) *v1.NodeClaim {
	tmpl := pool.Spec.Template
	labels := map[string]string{}
	maps.Copy(labels, tmpl.ObjectMeta.Labels)
	for k, v := range c.Requirements.Labels() {
		if k != corev1.LabelHostname && k != requirements.NodeNameField {
			labels[k] = v
		}
	}
	labels[v1.NodePoolLabelKey] = pool.Name
	var annotations map[string]string
	if len(tmpl.ObjectMeta.Annotations) > 0 {
		annotations = maps.Clone(tmpl.ObjectMeta.Annotations)
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: pool.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               pool.Name,
				UID:                pool.UID,
				BlockOwnerDeletion: new(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: *tmpl.Spec.DeepCopy(),
			Resources:             v1.ResourceRequirements{Requests: c.Requests.DeepCopy()},
		},
	}
	nc.Spec.Requirements = c.Requirements.NodeSelectorRequirements()
	return nc
}
