package conversion_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// defaulted returns obj as the API server keeps it at obj's own version:
// nulls without defaults pruned and the defaults of its CRD's schema for
// that version applied, as on create and on every read.
func defaulted(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	s := structural(t, obj.GroupVersionKind())
	out := obj.DeepCopy()
	defaulting.PruneNonNullableNullsWithoutDefaults(out.Object, s)
	defaulting.Default(out.Object, s)
	return out
}

// structural returns the structural schema of gvk in Dovetail's CRDs.
func structural(t *testing.T, gvk schema.GroupVersionKind) *structuralschema.Structural {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
			continue
		}
		for _, version := range crd.Spec.Versions {
			if version.Name != gvk.Version {
				continue
			}
			internal := &apiextensions.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
				t.Fatalf("converting the %s schema: %v", gvk, err)
			}
			s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
			if err != nil {
				t.Fatalf("reading the %s schema: %v", gvk, err)
			}
			return s
		}
	}
	t.Fatalf("no CRD serves %s", gvk)
	return nil
}

// typed decodes obj strictly into its Go type (an unknown field fails the
// test) and clears what the API server sets in metadata, keeping name,
// labels, annotations and finalizers.
func typed(t *testing.T, obj *unstructured.Unstructured) runtime.Object {
	t.Helper()
	out, err := conversion.NewObject(obj.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := sigsjson.UnmarshalStrict(data, out, sigsjson.DisallowUnknownFields)
	if err != nil || len(strict) > 0 {
		t.Fatalf("decoding %s %s: %v %v", obj.GetKind(), obj.GetName(), err, strict)
	}
	accessor := out.(metav1.Object)
	meta := metav1.ObjectMeta{
		Name: accessor.GetName(), Namespace: accessor.GetNamespace(),
		Labels: accessor.GetLabels(), Annotations: accessor.GetAnnotations(), Finalizers: accessor.GetFinalizers(),
	}
	meta.DeepCopyInto(objectMeta(out))
	return out
}

// objectMeta returns a pointer to the ObjectMeta of one of Dovetail's kinds.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	type withMeta interface{ GetObjectMeta() metav1.Object }
	return obj.(withMeta).GetObjectMeta().(*metav1.ObjectMeta)
}

// expectSame fails the test when want and got differ under
// conversion.Semantic (quantities by value, durations by their text, nil
// and empty alike), after typed().
func expectSame(t *testing.T, what string, want, got *unstructured.Unstructured) {
	t.Helper()
	w, g := typed(t, want), typed(t, got)
	if !conversion.Semantic().DeepEqual(w, g) {
		t.Errorf("%s mismatch (-want +got):\n%s", what, cmp.Diff(w, g, cmpOptions()...))
	}
}

// cmpOptions make cmp.Diff print what conversion.Semantic compares.
func cmpOptions() []cmp.Option {
	return []cmp.Option{
		cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmp.Transformer("NillableDuration", func(d v1.NillableDuration) string { return d.String() }),
		cmp.Transformer("Duration", func(d v1.Duration) string { return d.String() }),
		cmpopts.EquateEmpty(),
	}
}

// convertLocally converts obj with the same functions the webhook calls,
// reading NodePools (v1) from the API server, and returns the result as
// the API server would keep it (defaulted at the target version).
func convertLocally(t *testing.T, obj *unstructured.Unstructured, version string) *unstructured.Unstructured {
	t.Helper()
	c := &conversion.Converter{NodePools: conversion.NodePoolGetterFunc(func(ctx context.Context, name string) (*v1.NodePool, error) {
		np := &v1.NodePool{}
		return np, testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, np)
	})}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.ConvertJSON(context.Background(), data, obj.GroupVersionKind().Group+"/"+version)
	if err != nil {
		t.Fatalf("converting %s %s to %s: %v", obj.GetKind(), obj.GetName(), version, err)
	}
	converted := &unstructured.Unstructured{}
	if err := converted.UnmarshalJSON(out); err != nil {
		t.Fatal(err)
	}
	return defaulted(t, converted)
}

// withoutStatus returns a copy of obj without its status, which a create
// ignores.
func withoutStatus(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "status")
	return out
}
