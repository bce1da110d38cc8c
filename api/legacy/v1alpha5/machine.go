package v1alpha5

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineSpec is the v1alpha5 Machine spec.
type MachineSpec struct {
	Taints             []corev1.Taint                   `json:"taints,omitempty"`
	StartupTaints      []corev1.Taint                   `json:"startupTaints,omitempty"`
	Requirements       []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	Resources          ResourceRequirements             `json:"resources,omitempty"`
	Kubelet            *KubeletConfiguration            `json:"kubelet,omitempty"`
	MachineTemplateRef *MachineTemplateRef              `json:"machineTemplateRef,omitempty"`
}

// ResourceRequirements holds a Machine's resource requests.
type ResourceRequirements struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// MachineStatus is the v1alpha5 Machine status.
type MachineStatus struct {
	NodeName    string              `json:"nodeName,omitempty"`
	ProviderID  string              `json:"providerID,omitempty"`
	Capacity    corev1.ResourceList `json:"capacity,omitempty"`
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	Conditions  []Condition         `json:"conditions,omitempty"`
}

// Machine is the v1alpha5 Machine, the predecessor of the NodeClaim.
//
// +kubebuilder:object:root=true
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineSpec   `json:"spec,omitempty"`
	Status MachineStatus `json:"status,omitempty"`
}

// MachineList is a list of Machines.
//
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}
