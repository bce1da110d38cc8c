package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of this package's kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: "karpenter.k8s.aws", Version: "v1alpha1"}

var (
	// SchemeBuilder collects the functions that register this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers AWSNodeTemplate (and its list) with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &AWSNodeTemplate{}, &AWSNodeTemplateList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
