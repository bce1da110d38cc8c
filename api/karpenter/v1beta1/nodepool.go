package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// NodePoolSpec is the v1beta1 NodePool spec.
type NodePoolSpec struct {
	// template describes the NodeClaims this pool creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// disruption says when and how fast nodes of this pool may be removed.
	// +kubebuilder:default:={consolidationPolicy: WhenUnderutilized, expireAfter: "720h"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// limits cap the total resources of the pool's nodes.
	// +optional
	Limits v1.Limits `json:"limits,omitempty"`
	// weight orders NodePools: a higher weight is tried first.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeClaimTemplate is the metadata and spec stamped onto each NodeClaim a pool creates.
type NodeClaimTemplate struct {
	// metadata: labels and annotations for the NodeClaims and their Nodes.
	// +optional
	ObjectMeta v1.ObjectMeta `json:"metadata,omitempty"`
	// spec of the NodeClaims. resources.requests is forbidden here, as in
	// Karpenter's v1beta1 CRD: the v1 NodePool has no such field, so a value
	// written through v1beta1 would be lost by the conversion to v1.
	// +kubebuilder:validation:XValidation:rule="!has(self.resources) || !has(self.resources.requests)",message="resources.requests is not allowed in a NodePool template"
	// +required
	Spec NodeClaimSpec `json:"spec"`
}

// ConsolidationPolicy says which nodes consolidation may remove.
// +kubebuilder:validation:Enum=WhenEmpty;WhenUnderutilized
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty removes only nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenUnderutilized also removes or replaces under-used nodes.
	ConsolidationPolicyWhenUnderutilized ConsolidationPolicy = "WhenUnderutilized"
)

// Disruption configures voluntary disruption of a pool's nodes.
//
// +kubebuilder:validation:XValidation:message="consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized",rule="has(self.consolidateAfter) ? self.consolidationPolicy != 'WhenUnderutilized' || self.consolidateAfter == 'Never' : true"
// +kubebuilder:validation:XValidation:message="consolidateAfter must be specified with consolidationPolicy=WhenEmpty",rule="self.consolidationPolicy == 'WhenEmpty' ? has(self.consolidateAfter) : true"
type Disruption struct {
	// consolidateAfter is how long a node must be empty before it is removed (WhenEmpty only).
	// +optional
	ConsolidateAfter *v1.NillableDuration `json:"consolidateAfter,omitempty"`
	// consolidationPolicy says which nodes consolidation may remove.
	// +kubebuilder:default:=WhenUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// expireAfter is how long a node lives before it is replaced, or Never.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter v1.NillableDuration `json:"expireAfter"`
	// budgets cap how many nodes may be disrupted at once.
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:message="'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits how many nodes may be disrupted at once, optionally only while
// a cron schedule is active.
type Budget struct {
	// nodes is a count or a percentage of the pool's nodes.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="nodes must not be negative"
	// +kubebuilder:default:="10%"
	Nodes intstr.IntOrString `json:"nodes"`
	// schedule is a cron expression (UTC) at which the budget becomes active.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|([0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// duration the budget stays active after each schedule hit.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// NodePoolStatus is what Dovetail observes about a NodePool.
type NodePoolStatus struct {
	// resources sums the capacity of the pool's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// conditions of the pool.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool is the v1beta1 NodePool.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Weight",type="string",JSONPath=".spec.weight",priority=1
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}
