// Package v1alpha5 holds the karpenter.sh/v1alpha5 Provisioner and Machine as
// Karpenter v0.31 shipped them. They are never served: they exist so that
// `dovetail convert` can read old manifests and write NodePools and NodeClaims.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=karpenter.sh
package v1alpha5
