// Package v1beta1 holds the karpenter.sh/v1beta1 API (NodePool and NodeClaim as
// shipped by Karpenter v0.32-v0.37). Dovetail serves it, converted to and from
// the v1 storage version, so that manifests and objects written for v1beta1 keep
// working. New fields are never added here.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1beta1
