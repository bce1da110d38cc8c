package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaimSpec is the request for one node. It is immutable once created:
// the lifecycle controller launches exactly what was asked.
type NodeClaimSpec struct {
	NodeClaimTemplateSpec `json:",inline"`
	// resources the node must be able to run, the sum of the pods it was made for.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
}

// ResourceRequirements holds the resource requests a NodeClaim must satisfy.
type ResourceRequirements struct {
	// requests are the resources the node must offer.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is what Dovetail observes about a NodeClaim's instance and node.
type NodeClaimStatus struct {
	// nodeName is the name of the Node that registered for this claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// providerID identifies the instance at the cloud provider.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// imageID is the image the instance booted from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// capacity of the instance.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// allocatable is capacity minus system overhead: what pods may use.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// conditions: Launched, Registered, Initialized, Ready and the disruption conditions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// lastPodEventTime is the last time a pod was scheduled to, or removed from,
	// the node. Consolidation waits consolidateAfter from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

// NodeClaim conditions.
const (
	ConditionTypeLaunched            = "Launched"
	ConditionTypeRegistered          = "Registered"
	ConditionTypeInitialized         = "Initialized"
	ConditionTypeDrifted             = "Drifted"
	ConditionTypeExpired             = "Expired"
	ConditionTypeEmpty               = "Empty"
	ConditionTypeConsolidatable      = "Consolidatable"
	ConditionTypeDisrupting          = "Disrupting"
	ConditionTypeDisruptionReason    = "DisruptionReason"
	ConditionTypeDrained             = "Drained"
	ConditionTypeVolumesDetached     = "VolumesDetached"
	ConditionTypeInstanceTerminating = "InstanceTerminating"
)

// NodeClaim is one node Dovetail has decided to run: the request, the instance
// that satisfies it, and the Node that instance registers as.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
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
