package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodePoolSpec is what a platform team declares about a pool of nodes: what
// they may look like, how they may be disrupted, and how much they may cost.
// A pool with replicas is static (Karpenter v1.8): it keeps that many nodes
// whatever the pods, takes no weight and no limit but nodes, and can never
// become dynamic, nor a dynamic pool static.
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="replicas cannot be set or unset after creation: a NodePool cannot switch between static (replicas set) and dynamic (replicas unset)",fieldPath=".replicas",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || self.limits.all(k, k == 'nodes')",message="only limits.nodes may be set on a static NodePool (replicas set)",fieldPath=".limits",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="weight may not be set on a static NodePool (replicas set)",fieldPath=".weight",reason=FieldValueForbidden
type NodePoolSpec struct {
	// template describes the NodeClaims this pool creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// disruption says when and how fast nodes of this pool may be removed.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// limits cap the total resources (cpu, memory, nodes, ...) of the pool's
	// nodes; no node is launched that would cross them. A static pool
	// (replicas set) may only limit nodes.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// weight orders NodePools: a higher weight is tried first. Not allowed
	// with replicas.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// replicas makes the pool static (Karpenter v1.8): Dovetail keeps exactly
	// this many NodeClaims of the pool whatever the pods, never launches
	// from it for pending pods and never consolidates its nodes (drift and
	// expiration still replace them). Scaling down removes the least-used
	// nodes through the normal drain, within the pool's disruption budgets;
	// limits.nodes caps the count. Only limits.nodes may be set with it, not
	// weight, and it cannot be added to or removed from an existing pool.
	// The scale subresource (kubectl scale nodepool) writes it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// IsStatic reports whether the pool is static: spec.replicas is set.
func (in *NodePool) IsStatic() bool { return in != nil && in.Spec.Replicas != nil }

// Limits are resource quantities a NodePool's nodes may not exceed in total.
type Limits corev1.ResourceList

// NodeClaimTemplate is the metadata and spec stamped onto each NodeClaim a pool creates.
type NodeClaimTemplate struct {
	// metadata: labels and annotations for the NodeClaims and their Nodes.
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty"`
	// spec of the NodeClaims.
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the subset of object metadata a NodePool may template.
type ObjectMeta struct {
	// labels are put on every NodeClaim and Node of the pool.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.matches('^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$') && x.size() <= 316)",message="label keys must be qualified names"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x != 'karpenter.sh/nodepool')",message="label \"karpenter.sh/nodepool\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x != 'kubernetes.io/hostname')",message="label \"kubernetes.io/hostname\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x in ['beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/region', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'failure-domain.beta.kubernetes.io/zone', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build'] || x.find('^([^/]+)').endsWith('node.kubernetes.io') || x.find('^([^/]+)').endsWith('node-restriction.kubernetes.io') || !x.find('^([^/]+)').endsWith('kubernetes.io'))",message="label domain \"kubernetes.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.find('^([^/]+)').endsWith('kops.k8s.io') || !x.find('^([^/]+)').endsWith('k8s.io'))",message="label domain \"k8s.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x == 'karpenter.sh/capacity-type' || !x.find('^([^/]+)').endsWith('karpenter.sh'))",message="label domain \"karpenter.sh\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x in ['karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-tenancy'] || !x.find('^([^/]+)').endsWith('karpenter.k8s.aws'))",message="label domain \"karpenter.k8s.aws\" is restricted"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations are put on every NodeClaim and Node of the pool.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove.
// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized;WhenUnderutilized;Balanced
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty removes only nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized also removes or replaces
	// nodes whose pods fit elsewhere or on a cheaper node. Canonical (as shipped).
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyWhenUnderutilized is the v1 API document's spelling of
	// WhenEmptyOrUnderutilized; it is accepted and means the same.
	ConsolidationPolicyWhenUnderutilized ConsolidationPolicy = "WhenUnderutilized"
	// ConsolidationPolicyBalanced (Karpenter v1.14) removes empty nodes and
	// consolidates under-used ones like WhenEmptyOrUnderutilized, but only
	// moves whose share of the pool's cost saved is worth their share of the
	// pool's disruption: score = (savings / pool cost) / (disruption cost /
	// pool disruption cost) must be at least 1/k, with k the
	// consolidationThreshold (2 by default).
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// DefaultConsolidationThreshold is k of the Balanced policy when
// consolidationThreshold is not set: Karpenter's fixed value (v1.BalancedK).
const DefaultConsolidationThreshold int32 = 2

// ConsolidatesUnderutilized reports whether the policy consolidates nodes
// that are under-used, not only empty ones: every policy but WhenEmpty.
func (p ConsolidationPolicy) ConsolidatesUnderutilized() bool {
	return p != ConsolidationPolicyWhenEmpty
}

// Canonical returns the shipped spelling of the policy.
func (p ConsolidationPolicy) Canonical() ConsolidationPolicy {
	if p == ConsolidationPolicyWhenUnderutilized || p == "" {
		return ConsolidationPolicyWhenEmptyOrUnderutilized
	}
	return p
}

// DisruptionReason names why a node is voluntarily disrupted; budgets may be scoped to reasons.
// +kubebuilder:validation:Enum=Underutilized;Empty;Drifted;Expired
type DisruptionReason string

const (
	// DisruptionReasonUnderutilized means the node's pods fit elsewhere or on a cheaper node.
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	// DisruptionReasonEmpty means the node runs no workload pods.
	DisruptionReasonEmpty DisruptionReason = "Empty"
	// DisruptionReasonDrifted means the node no longer matches its NodePool or NodeClass.
	DisruptionReasonDrifted DisruptionReason = "Drifted"
	// DisruptionReasonExpired is the v1 document's reason for expiry. It is accepted
	// in budgets; expiration itself is forceful and not budgeted, as in Karpenter v1.
	DisruptionReasonExpired DisruptionReason = "Expired"
)

// Disruption configures voluntary disruption of a pool's nodes.
// +kubebuilder:validation:XValidation:rule="!has(self.consolidationThreshold) || (has(self.consolidationPolicy) && self.consolidationPolicy == 'Balanced')",message="consolidationThreshold may only be set with consolidationPolicy Balanced",fieldPath=".consolidationThreshold",reason=FieldValueForbidden
type Disruption struct {
	// consolidateAfter is how long a node must see no pod arrive or leave
	// before consolidation considers it, or Never to turn consolidation off.
	// +kubebuilder:default:="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter"`
	// consolidationPolicy says which nodes consolidation may remove.
	// WhenUnderutilized is accepted as the v1 document's name for WhenEmptyOrUnderutilized.
	// Balanced (Karpenter v1.14) consolidates only the moves whose savings are
	// worth their disruption.
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// consolidationThreshold is k of the Balanced policy: a move is made when
	// its share of the pool's cost saved is at least 1/k of its share of the
	// pool's disruption cost, so a higher k consolidates more. Unset means 2,
	// Karpenter's fixed value. Only valid with consolidationPolicy Balanced.
	// A Dovetail extension (Karpenter v1.14 fixes k at 2); the name, type and
	// bounds are those of Karpenter's Balanced consolidation design.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3
	// +optional
	ConsolidationThreshold *int32 `json:"consolidationThreshold,omitempty"`
	// budgets cap how many nodes may be disrupted at once. The most restrictive
	// active budget applies.
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.schedule) == has(x.duration))",message="'schedule' must be set with 'duration'"
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits how many nodes may be disrupted at once, optionally only while
// a cron schedule is active and only for some reasons.
type Budget struct {
	// reasons this budget applies to; empty means all reasons.
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// nodes is a count (5 or "5") or a percentage of the pool's nodes ("10%", rounded up).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="nodes must not be negative"
	// +kubebuilder:default:="10%"
	Nodes intstr.IntOrString `json:"nodes"`
	// schedule is a cron expression (UTC; five fields or a macro such as @daily)
	// at which the budget becomes active for duration.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|([0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+ [0-9*,/?LW#A-Za-z-]+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// duration the budget stays active after each schedule hit (hours and minutes).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// NodePoolStatus is what Dovetail observes about a NodePool.
type NodePoolStatus struct {
	// resources sums the capacity of the pool's nodes, including a "nodes" count.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// nodes is the number of nodes in the pool.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// conditions: NodeClassReady and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool conditions.
const (
	// ConditionTypeNodeClassReady mirrors the Ready condition of the referenced NodeClass.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeReady says the pool may be used to launch nodes.
	ConditionTypeReady = "Ready"
)

// NodePool declares a pool of nodes that Dovetail launches for pending pods and
// removes when they are empty, under-used, drifted or expired.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.resources.nodes"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1
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
