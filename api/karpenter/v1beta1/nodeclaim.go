package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// NodeClassReference points at the provider NodeClass; in v1beta1 only the name is required.
type NodeClassReference struct {
	// kind of the NodeClass; defaults to the provider's NodeClass kind.
	// +optional
	Kind string `json:"kind,omitempty"`
	// name of the NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// apiVersion of the NodeClass, for example karpenter.k8s.aws/v1beta1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// NodeClaimSpec is the v1beta1 NodeClaim spec (also the NodePool template spec).
type NodeClaimSpec struct {
	// taints are put on the node; pods must tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// startupTaints are expected to be removed by another component before the node is initialized.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// requirements constrain the labels of the node.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []v1.NodeSelectorRequirementWithMinValues `json:"requirements"`
	// resources the node must be able to run.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// kubelet settings of the node.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// nodeClassRef names the provider NodeClass.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
}

// ResourceRequirements holds the resource requests a NodeClaim must satisfy.
type ResourceRequirements struct {
	// requests are the resources the node must offer.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is what Dovetail observes about a NodeClaim.
type NodeClaimStatus struct {
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeClaim is the v1beta1 NodeClaim.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",priority=1
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodeClaimSpec   `json:"spec"`
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}
