package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of NodeOverlays, shared with NodePools and NodeClaims.
const Group = "karpenter.sh"

// SchemeGroupVersion is the group and version of this package's kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

var (
	// SchemeBuilder collects the functions that register this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers NodeOverlay (and its list) with a scheme. Callers
	// pass their own scheme; this package never touches a global one.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &NodeOverlay{}, &NodeOverlayList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
