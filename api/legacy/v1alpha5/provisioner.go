package v1alpha5

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ProvisionerSpec is the v1alpha5 Provisioner spec.
type ProvisionerSpec struct {
	// Annotations are applied to every node.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are applied to every node.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are applied to every node.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied to every node and removed by another component.
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes' labels.
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// KubeletConfiguration of the nodes.
	KubeletConfiguration *KubeletConfiguration `json:"kubeletConfiguration,omitempty"`
	// Provider is the inline, provider-specific configuration (an AWSNodeTemplate spec on AWS).
	// +kubebuilder:pruning:PreserveUnknownFields
	Provider *runtime.RawExtension `json:"provider,omitempty"`
	// ProviderRef names a provider-specific node template.
	ProviderRef *MachineTemplateRef `json:"providerRef,omitempty"`
	// TTLSecondsAfterEmpty removes a node this long after it becomes empty.
	TTLSecondsAfterEmpty *int64 `json:"ttlSecondsAfterEmpty,omitempty"`
	// TTLSecondsUntilExpired replaces a node this long after it is created.
	TTLSecondsUntilExpired *int64 `json:"ttlSecondsUntilExpired,omitempty"`
	// Limits cap the total resources of the Provisioner's nodes.
	Limits *Limits `json:"limits,omitempty"`
	// Weight orders Provisioners.
	Weight *int32 `json:"weight,omitempty"`
	// Consolidation enables consolidation of under-used nodes.
	Consolidation *Consolidation `json:"consolidation,omitempty"`
}

// MachineTemplateRef points at a provider-specific node template.
type MachineTemplateRef struct {
	// Kind of the template.
	Kind string `json:"kind,omitempty"`
	// Name of the template.
	Name string `json:"name"`
	// APIVersion of the template.
	APIVersion string `json:"apiVersion,omitempty"`
}

// Limits cap the total resources of a Provisioner's nodes.
type Limits struct {
	// Resources are the capped quantities.
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// Consolidation enables consolidation.
type Consolidation struct {
	// Enabled turns consolidation on.
	Enabled *bool `json:"enabled,omitempty"`
}

// KubeletConfiguration is the v1alpha5 kubelet configuration.
type KubeletConfiguration struct {
	ClusterDNS                  []string                   `json:"clusterDNS,omitempty"`
	ContainerRuntime            *string                    `json:"containerRuntime,omitempty"`
	MaxPods                     *int32                     `json:"maxPods,omitempty"`
	PodsPerCore                 *int32                     `json:"podsPerCore,omitempty"`
	SystemReserved              corev1.ResourceList        `json:"systemReserved,omitempty"`
	KubeReserved                corev1.ResourceList        `json:"kubeReserved,omitempty"`
	EvictionHard                map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32                     `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32                     `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32                     `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool                      `json:"cpuCFSQuota,omitempty"`
}

// Condition is the knative-style condition v1alpha5 objects carried.
type Condition struct {
	Type               string                 `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	Severity           string                 `json:"severity,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime,omitempty"`
	Reason             string                 `json:"reason,omitempty"`
	Message            string                 `json:"message,omitempty"`
}

// ProvisionerStatus is the v1alpha5 Provisioner status (dropped by conversion).
type ProvisionerStatus struct {
	LastScaleTime *metav1.Time        `json:"lastScaleTime,omitempty"`
	Conditions    []Condition         `json:"conditions,omitempty"`
	Resources     corev1.ResourceList `json:"resources,omitempty"`
}

// Provisioner is the v1alpha5 Provisioner, the predecessor of the NodePool.
//
// +kubebuilder:object:root=true
type Provisioner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProvisionerSpec   `json:"spec,omitempty"`
	Status ProvisionerStatus `json:"status,omitempty"`
}

// ProvisionerList is a list of Provisioners.
//
// +kubebuilder:object:root=true
type ProvisionerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provisioner `json:"items"`
}
