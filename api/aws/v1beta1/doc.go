// Package v1beta1 holds the karpenter.k8s.aws/v1beta1 API (EC2NodeClass as
// shipped by Karpenter v0.32-v0.37). Dovetail serves it, converted to and from
// v1, so that v1beta1 manifests keep working; sub-structures that did not change
// are shared with v1.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1beta1
