// Package v1alpha1 holds the karpenter.kwok.sh/v1alpha1 API: KWOKNodeClass, the
// NodeClass of the kwok provider, whose nodes exist only as API objects driven
// by the kwok controller. It lets Dovetail run end to end on a laptop or in CI.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.kwok.sh
package v1alpha1
