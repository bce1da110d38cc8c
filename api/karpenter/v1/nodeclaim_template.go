package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeSelectorRequirementWithMinValues is a node-selector requirement that may
// also ask for a minimum number of distinct values (for instance, at least two
// instance families) among the instance types a NodeClaim may launch.
//
// +kubebuilder:validation:XValidation:rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",message="requirements with operator 'In' must have a value defined"
// +kubebuilder:validation:XValidation:rule="self.operator != 'NotIn' || (has(self.values) && size(self.values) > 0)",message="requirements with operator 'NotIn' must have a value defined"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))",message="requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="requirements with operator 'Exists' or 'DoesNotExist' must not have values"
// +kubebuilder:validation:XValidation:rule="!has(self.minValues) || self.operator != 'In' || size(self.values) >= self.minValues",message="requirements with 'minValues' must have at least that many values specified in the 'values' field"
type NodeSelectorRequirementWithMinValues struct {
	// key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:XValidation:rule="self != 'kubernetes.io/hostname'",message="label \"kubernetes.io/hostname\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self in ['beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/region', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'failure-domain.beta.kubernetes.io/zone', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build'] || self.find('^([^/]+)').endsWith('node.kubernetes.io') || self.find('^([^/]+)').endsWith('node-restriction.kubernetes.io') || !self.find('^([^/]+)').endsWith('kubernetes.io')",message="label domain \"kubernetes.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.find('^([^/]+)').endsWith('kops.k8s.io') || !self.find('^([^/]+)').endsWith('k8s.io')",message="label domain \"k8s.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')",message="label domain \"karpenter.sh\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-tenancy'] || !self.find('^([^/]+)').endsWith('karpenter.k8s.aws')",message="label domain \"karpenter.k8s.aws\" is restricted"
	Key string `json:"key"`
	// operator relates the key to the values.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// values of the requirement: one or more for In and NotIn, exactly one
	// integer for Gt, Lt, Gte and Lte, none for Exists and DoesNotExist.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// minValues is the minimum number of distinct values of this key that the
	// instance types offered for a NodeClaim must cover.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorRequirement returns the requirement without its minValues.
func (r NodeSelectorRequirementWithMinValues) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
}

// NodeClassReference points a NodePool or NodeClaim at the provider-specific
// NodeClass (for example an EC2NodeClass) that configures its instances.
type NodeClassReference struct {
	// kind of the NodeClass, for example EC2NodeClass or KWOKNodeClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// name of the NodeClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// group of the NodeClass, for example karpenter.k8s.aws. A version suffix
	// ("karpenter.k8s.aws/v1", as one upstream example writes it) is accepted
	// and ignored: only one version of a NodeClass is ever served.
	// +kubebuilder:validation:Pattern=`^[^/]+(/[^/]+)?$`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group may not be empty"
	// +required
	Group string `json:"group"`
}

// NodeClaimTemplateSpec is the part of a NodeClaim's spec that a NodePool templates.
type NodeClaimTemplateSpec struct {
	// taints are put on every node made from this template; pods must tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// startupTaints are put on new nodes and expected to be removed by another
	// component (a CNI or device plugin) before the node is considered initialized.
	// Pods need not tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// requirements constrain the labels, and so the instance types, zones and
	// capacity types, of the nodes made from this template. A change drifts
	// only the nodes whose labels no longer meet them.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements" hash:"ignore"`
	// nodeClassRef names the provider NodeClass of the nodes.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// terminationGracePeriod bounds how long a node may drain once deletion starts:
	// after it, pods are deleted regardless of PDBs and do-not-disrupt.
	// +optional
	TerminationGracePeriod *Duration `json:"terminationGracePeriod,omitempty"`
	// expireAfter is how long a node lives before it is replaced, or Never.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}
