// Package v1alpha1 holds the karpenter.sh/v1alpha1 API: NodeOverlay, which
// changes what the scheduling simulation believes about instance types (their
// price and extended-resource capacity) without touching the cloud provider.
// Its field names, validation and conditions follow Karpenter's NodeOverlay
// so that overlays written for Karpenter apply to Dovetail unchanged. It has
// no other version, so nothing converts.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
