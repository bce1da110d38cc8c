package conversion_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// The checks in this file restate the main rules of docs/migration.md
// field by field, independently of the conversion functions, so that the
// objects the API server returns are checked against the documented mapping
// and not only against the functions the webhook itself calls.

// Annotations of the mapping.
const (
	ubuntuAnnotation = "compatibility.karpenter.k8s.aws/v1beta1-ubuntu"
	aliasVersion     = "compatibility.karpenter.k8s.aws/v1-alias-version"
)

// str returns the string at a dotted path of obj, "" when absent.
func str(obj *unstructured.Unstructured, path string) string {
	s, _, _ := unstructured.NestedString(obj.Object, strings.Split(path, ".")...)
	return s
}

// has reports whether obj has a value at a dotted path.
func has(obj *unstructured.Unstructured, path string) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	return ok
}

// expectField fails the test when obj's string at path is not want.
func expectField(t *testing.T, obj *unstructured.Unstructured, path, want string) {
	t.Helper()
	if got := str(obj, path); got != want {
		t.Errorf("%s %s: %s = %q, want %q", obj.GetAPIVersion(), obj.GetName(), path, got, want)
	}
}

// checkV1beta1ToV1 checks the v1beta1 -> v1 mapping of one object.
func checkV1beta1ToV1(t *testing.T, in, out *unstructured.Unstructured) {
	t.Helper()
	if out.GetAPIVersion() != in.GroupVersionKind().Group+"/v1" {
		t.Errorf("%s %s read as v1 has apiVersion %s", in.GetKind(), in.GetName(), out.GetAPIVersion())
	}
	switch in.GetKind() {
	case "NodePool":
		checkNodeClassRefToV1(t, in, out, "spec.template.spec.nodeClassRef")
		checkKubeletToAnnotation(t, in, out, "spec.template.spec.kubelet")
		// expireAfter moves from the disruption block to the template.
		expectField(t, out, "spec.template.spec.expireAfter", str(in, "spec.disruption.expireAfter"))
		if has(out, "spec.disruption.expireAfter") {
			t.Errorf("NodePool %s read as v1 still has spec.disruption.expireAfter", in.GetName())
		}
		// The shipped spelling of the under-utilization policy.
		policy := map[string]string{"WhenUnderutilized": "WhenEmptyOrUnderutilized", "WhenEmpty": "WhenEmpty"}[str(in, "spec.disruption.consolidationPolicy")]
		expectField(t, out, "spec.disruption.consolidationPolicy", policy)
		if !has(in, "spec.disruption.consolidateAfter") {
			expectField(t, out, "spec.disruption.consolidateAfter", "0s")
		}
	case "NodeClaim":
		checkNodeClassRefToV1(t, in, out, "spec.nodeClassRef")
		checkKubeletToAnnotation(t, in, out, "spec.kubelet")
		// expireAfter comes from the NodePool of the karpenter.sh/nodepool label.
		want := conversion.DefaultExpireAfter
		if name, ok := in.GetLabels()[v1.NodePoolLabelKey]; ok {
			pool := &v1.NodePool{}
			if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, pool); err == nil {
				want = pool.Spec.Template.Spec.ExpireAfter.String()
			}
		}
		expectField(t, out, "spec.expireAfter", want)
	case "EC2NodeClass":
		family, terms := str(in, "spec.amiFamily"), has(in, "spec.amiSelectorTerms")
		switch {
		case family == "Ubuntu":
			expectField(t, out, "spec.amiFamily", "AL2")
			if out.GetAnnotations()[ubuntuAnnotation] == "" {
				t.Errorf("EC2NodeClass %s: Ubuntu read as v1 lacks the %s annotation", in.GetName(), ubuntuAnnotation)
			}
		case family != "Custom" && family != "" && !terms:
			// A family without terms becomes an alias.
			expectField(t, out, "spec.amiFamily", "")
			alias := strings.ToLower(family) + "@" + in.GetAnnotations()[aliasVersion]
			if in.GetAnnotations()[aliasVersion] == "" {
				alias += "latest"
			}
			terms, _, _ := unstructured.NestedSlice(out.Object, "spec", "amiSelectorTerms")
			if diff := cmp.Diff([]any{map[string]any{"alias": alias}}, terms); diff != "" {
				t.Errorf("EC2NodeClass %s: amiSelectorTerms read as v1 mismatch (-want +got):\n%s", in.GetName(), diff)
			}
		default:
			expectField(t, out, "spec.amiFamily", family)
			inTerms, _, _ := unstructured.NestedSlice(in.Object, "spec", "amiSelectorTerms")
			outTerms, _, _ := unstructured.NestedSlice(out.Object, "spec", "amiSelectorTerms")
			if diff := cmp.Diff(inTerms, outTerms); diff != "" {
				t.Errorf("EC2NodeClass %s: amiSelectorTerms read as v1 mismatch (-want +got):\n%s", in.GetName(), diff)
			}
		}
	}
}

// checkNodeClassRefToV1 checks that a v1beta1 nodeClassRef {name, kind?,
// apiVersion?} becomes {group, kind, name}, defaulting to EC2NodeClass.
func checkNodeClassRefToV1(t *testing.T, in, out *unstructured.Unstructured, path string) {
	t.Helper()
	group, kind := "karpenter.k8s.aws", "EC2NodeClass"
	if apiVersion := str(in, path+".apiVersion"); apiVersion != "" {
		group, _, _ = strings.Cut(apiVersion, "/")
	}
	if k := str(in, path+".kind"); k != "" {
		kind = k
	}
	expectField(t, out, path+".group", group)
	expectField(t, out, path+".kind", kind)
	expectField(t, out, path+".name", str(in, path+".name"))
}

// checkKubeletToAnnotation checks that a v1beta1 kubelet block becomes the
// v1beta1-kubelet-conversion annotation, value for value.
func checkKubeletToAnnotation(t *testing.T, in, out *unstructured.Unstructured, path string) {
	t.Helper()
	annotation, ok := out.GetAnnotations()[v1.KubeletCompatibilityAnnotationKey]
	block, hasKubelet, _ := unstructured.NestedMap(in.Object, strings.Split(path, ".")...)
	if has(out, path) {
		t.Errorf("%s %s read as v1 still has %s", in.GetKind(), in.GetName(), path)
	}
	if ok != hasKubelet {
		t.Fatalf("%s %s: kubelet block %v, annotation %s %q", in.GetKind(), in.GetName(), hasKubelet, v1.KubeletCompatibilityAnnotationKey, annotation)
	}
	if !hasKubelet {
		return
	}
	want, got := &v1beta1.KubeletConfiguration{}, &v1beta1.KubeletConfiguration{}
	data, err := json.Marshal(block)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(annotation), got); err != nil {
		t.Fatalf("%s %s: the kubelet annotation does not decode: %v", in.GetKind(), in.GetName(), err)
	}
	if !conversion.Semantic().DeepEqual(want, got) {
		t.Errorf("%s %s: kubelet annotation mismatch (-want +got):\n%s", in.GetKind(), in.GetName(), cmp.Diff(want, got, cmpOptions()...))
	}
}

// checkV1ToV1beta1 checks the v1 -> v1beta1 mapping of one object.
func checkV1ToV1beta1(t *testing.T, in, out *unstructured.Unstructured) {
	t.Helper()
	if out.GetAPIVersion() != in.GroupVersionKind().Group+"/v1beta1" {
		t.Errorf("%s %s read as v1beta1 has apiVersion %s", in.GetKind(), in.GetName(), out.GetAPIVersion())
	}
	switch in.GetKind() {
	case "NodePool":
		expectField(t, out, "spec.template.spec.nodeClassRef.name", str(in, "spec.template.spec.nodeClassRef.name"))
		expectField(t, out, "spec.template.spec.nodeClassRef.kind", str(in, "spec.template.spec.nodeClassRef.kind"))
		if group := str(in, "spec.template.spec.nodeClassRef.group"); group == "karpenter.k8s.aws" {
			expectField(t, out, "spec.template.spec.nodeClassRef.apiVersion", "karpenter.k8s.aws/v1beta1")
		}
		expectField(t, out, "spec.disruption.expireAfter", str(in, "spec.template.spec.expireAfter"))
		policy := map[string]string{"WhenEmptyOrUnderutilized": "WhenUnderutilized", "WhenUnderutilized": "WhenUnderutilized", "WhenEmpty": "WhenEmpty"}[str(in, "spec.disruption.consolidationPolicy")]
		expectField(t, out, "spec.disruption.consolidationPolicy", policy)
		if has(in, "spec.template.spec.terminationGracePeriod") && out.GetAnnotations()[conversion.V1FieldsAnnotationKey] == "" {
			t.Errorf("NodePool %s: terminationGracePeriod has no v1beta1 field and is not kept in %s", in.GetName(), conversion.V1FieldsAnnotationKey)
		}
	case "EC2NodeClass":
		terms, _, _ := unstructured.NestedSlice(in.Object, "spec", "amiSelectorTerms")
		for _, term := range terms {
			alias, _ := term.(map[string]any)["alias"].(string)
			if alias == "" {
				continue
			}
			family, version, _ := strings.Cut(alias, "@")
			want := map[string]string{"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket", "windows2019": "Windows2019", "windows2022": "Windows2022", "windows2025": "Windows2025"}[family]
			if explicit := str(in, "spec.amiFamily"); explicit != "" {
				want = explicit
			}
			expectField(t, out, "spec.amiFamily", want)
			if has(out, "spec.amiSelectorTerms") {
				t.Errorf("EC2NodeClass %s: the alias %s read as v1beta1 left amiSelectorTerms", in.GetName(), alias)
			}
			if version != "latest" && out.GetAnnotations()[aliasVersion] != version {
				t.Errorf("EC2NodeClass %s: alias version %s not in %s: %v", in.GetName(), version, aliasVersion, out.GetAnnotations())
			}
		}
	}
}
