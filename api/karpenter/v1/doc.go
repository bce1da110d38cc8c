// Package v1 holds the karpenter.sh/v1 API: NodePool and NodeClaim, the storage
// version of the karpenter.sh group and the hub every other version converts
// through. The field names, defaults and validation follow the Karpenter v1 API
// document so that manifests written for Karpenter apply to Dovetail unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
