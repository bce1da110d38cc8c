// Package v1alpha1 holds the karpenter.k8s.aws/v1alpha1 AWSNodeTemplate as
// Karpenter v0.31 shipped it. It is never served: it exists so that
// `dovetail convert` can read old manifests and write EC2NodeClasses.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=karpenter.k8s.aws
package v1alpha1
