package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations a NodeClaim carries when the instance types it may launch were
// changed by a NodeOverlay: the cloud provider then launches by the overlaid
// order (on AWS, prioritized allocation strategies) instead of its own prices.
const (
	// PriceOverlayAppliedAnnotationKey is "true" on a NodeClaim one of whose
	// instance types had an offering whose price an overlay changed.
	PriceOverlayAppliedAnnotationKey = Group + "/price-overlay-applied"
	// CapacityOverlayAppliedAnnotationKey is "true" on a NodeClaim one of
	// whose instance types had capacity added by an overlay.
	CapacityOverlayAppliedAnnotationKey = Group + "/capacity-overlay-applied"
)

// Condition types of a NodeOverlay.
const (
	// ConditionTypeValidationSucceeded is True when the overlay passed the
	// checks the CRD schema cannot make (its requirements parse, its capacity
	// names only extended resources) and does not conflict with another
	// overlay of the same weight. An overlay with it False is not applied.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeReady summarises the others: True when the overlay is applied.
	ConditionTypeReady = "Ready"
)

// Reasons of a False ValidationSucceeded (and Ready) condition.
const (
	// ReasonRuntimeValidation says the spec failed a check the schema cannot make.
	ReasonRuntimeValidation = "RuntimeValidation"
	// ReasonConflict says another overlay of the same weight changes the
	// same price or resource of an instance type the overlay matches.
	ReasonConflict = "Conflict"
)

// NodeSelectorRequirement selects instance types (and their offerings) by
// label: a key, an operator and values.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="requirements with operator 'In' or 'NotIn' must have a value defined"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))",message="requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="requirements with operator 'Exists' or 'DoesNotExist' must not have values"
type NodeSelectorRequirement struct {
	// key is the label key the requirement applies to: a well-known label
	// (node.kubernetes.io/instance-type, karpenter.sh/capacity-type,
	// karpenter.sh/nodepool, ...) or a label of the NodePool's template.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:XValidation:rule="self != 'kubernetes.io/hostname'",message="label \"kubernetes.io/hostname\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')",message="label domain \"karpenter.sh\" is restricted"
	// +required
	Key string `json:"key"`
	// operator relates the key to the values: In, NotIn, Exists,
	// DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// values of the requirement: one or more for In and NotIn, exactly one
	// integer for Gt, Lt, Gte and Lte, none for Exists and DoesNotExist.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// NodeSelectorRequirement returns the requirement as a core node-selector requirement.
func (r NodeSelectorRequirement) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
}

// NodeOverlaySpec says which instance types (and offerings) the overlay
// applies to and what it changes about them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.price) || !has(self.priceAdjustment)",message="cannot set both 'price' and 'priceAdjustment'"
type NodeOverlaySpec struct {
	// requirements select the instance types and offerings the overlay
	// applies to, by the instance type's labels, the offering's zone and
	// capacity type, the NodePool's name (karpenter.sh/nodepool) and the
	// labels of the NodePool's template. All must match.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// priceAdjustment changes the price of the matching offerings: a signed
	// amount in dollars per hour ("-0.5", "+1.2") or a signed percentage
	// ("+10%", "-15%", no lower than "-100%"). A price never goes below zero.
	// +kubebuilder:validation:Pattern=`^([+-]\d*\.?\d+|\+\d*\.?\d+%|-(\d{1,2}(\.\d+)?|100)%)$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// price replaces the price of the matching offerings, in dollars per hour
	// ("0.25"). It may not be set with priceAdjustment.
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// capacity adds extended resources (for example example.com/fpga: 1) to
	// the matching instance types; a resource the type has already is
	// replaced. cpu, memory, ephemeral-storage and pods may not be set.
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",message="capacity may only name extended resources, not cpu, memory, ephemeral-storage or pods"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// weight orders overlays that change the same thing: the higher weight
	// wins. Two overlays of the same weight that change the same price or
	// resource conflict; the one whose name sorts last is applied and the
	// other is not (its ValidationSucceeded condition says Conflict).
	// Unset counts as 0.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeOverlayStatus reports whether the overlay is applied.
type NodeOverlayStatus struct {
	// conditions: ValidationSucceeded and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeOverlay changes the price or extended-resource capacity that
// scheduling and consolidation see for the instance types it selects, for
// example to account for a negotiated discount or for a device a DaemonSet
// exposes once the node is up.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodeOverlaySpec   `json:"spec"`
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// WeightOrZero returns spec.weight, 0 when unset.
func (o *NodeOverlay) WeightOrZero() int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}
