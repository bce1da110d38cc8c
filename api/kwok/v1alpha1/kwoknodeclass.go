package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// KWOKNodeClassSpec configures the simulated nodes of the NodePools that reference it.
type KWOKNodeClassSpec struct {
	// nodeRegistrationDelay is how long a simulated instance takes to boot before
	// its Node object appears.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	NodeRegistrationDelay *metav1.Duration `json:"nodeRegistrationDelay,omitempty"`
}

// KWOKNodeClassStatus reports whether the class can be used to launch nodes.
type KWOKNodeClassStatus struct {
	// conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionTypeReady says the class may be used to launch nodes.
const ConditionTypeReady = "Ready"

// KWOKNodeClass is the NodeClass of the kwok provider.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   KWOKNodeClassSpec   `json:"spec,omitempty"`
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
//
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}
