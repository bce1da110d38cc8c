package conversion_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// object decodes a YAML manifest, failing the test on error.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("decoding manifest: %v\n%s", err, manifest)
	}
	return &unstructured.Unstructured{Object: obj}
}

// v1beta1NodeClaim is a v1beta1 NodeClaim named name with the given labels.
func v1beta1NodeClaim(t *testing.T, name string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	obj := object(t, `
apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
spec:
  nodeClassRef: {name: default}
  requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
`)
	obj.SetName(name)
	obj.SetLabels(labels)
	return obj
}

// TestNodeClaimExpireAfterComesFromItsNodePool checks the one conversion
// that reads another object: a v1beta1 NodeClaim has no expireAfter (it was a
// NodePool setting), and in v1 it gets its NodePool's, read by the webhook
// from the API server.
func TestNodeClaimExpireAfterComesFromItsNodePool(t *testing.T) {
	serveConversions(t)
	for _, pool := range []struct{ name, expireAfter string }{{"expire-weekly", "168h"}, {"expire-never", "Never"}} {
		np := object(t, `
apiVersion: karpenter.sh/v1beta1
kind: NodePool
spec:
  template:
    spec:
      nodeClassRef: {name: default}
      requirements: []
  disruption: {consolidationPolicy: WhenUnderutilized}
`)
		np.SetName(pool.name)
		if err := unstructured.SetNestedField(np.Object, pool.expireAfter, "spec", "disruption", "expireAfter"); err != nil {
			t.Fatal(err)
		}
		create(t, np)
	}
	cases := map[string]struct {
		labels map[string]string
		want   string
	}{
		"from its NodePool":       {labels: map[string]string{"karpenter.sh/nodepool": "expire-weekly"}, want: "168h"},
		"Never from its NodePool": {labels: map[string]string{"karpenter.sh/nodepool": "expire-never"}, want: "Never"},
		"no NodePool label":       {want: conversion.DefaultExpireAfter},
		"a NodePool that is gone": {labels: map[string]string{"karpenter.sh/nodepool": "no-such-pool"}, want: conversion.DefaultExpireAfter},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := v1beta1NodeClaim(t, "expire-"+dnsLabel(name), tc.labels)
			written := defaulted(t, create(t, nc))
			asV1 := get(t, "NodeClaim", nc.GetName(), "v1")
			if diff := cmp.Diff(tc.want, str(asV1, "spec.expireAfter")); diff != "" {
				t.Errorf("v1 expireAfter mismatch (-want +got):\n%s", diff)
			}
			back := get(t, "NodeClaim", nc.GetName(), "v1beta1")
			if _, ok := back.GetAnnotations()[conversion.V1FieldsAnnotationKey]; ok {
				t.Errorf("a NodeClaim that follows its NodePool needs no %s annotation: %v", conversion.V1FieldsAnnotationKey, back.GetAnnotations())
			}
			expectSame(t, "NodeClaim read back as v1beta1", written, back)
		})
	}

	// A NodeClaim keeps the expireAfter it was created with when its
	// NodePool's changes; read as v1beta1 it then says so in v1-fields,
	// so that writing it back through v1beta1 loses nothing.
	t.Run("the NodePool changes afterwards", func(t *testing.T) {
		nc := v1beta1NodeClaim(t, "expire-pool-changes", map[string]string{"karpenter.sh/nodepool": "expire-weekly"})
		create(t, nc)
		pool := get(t, "NodePool", "expire-weekly", "v1")
		if err := unstructured.SetNestedField(pool.Object, "24h", "spec", "template", "spec", "expireAfter"); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn(t, "NodePool", "v1").Update(context.Background(), pool, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("changing the NodePool's expireAfter: %v", err)
		}
		back := get(t, "NodeClaim", nc.GetName(), "v1beta1")
		var kept struct {
			ExpireAfter string `json:"expireAfter"`
		}
		if err := json.Unmarshal([]byte(back.GetAnnotations()[conversion.V1FieldsAnnotationKey]), &kept); err != nil || kept.ExpireAfter != "168h" {
			t.Fatalf("v1beta1 NodeClaim annotations %v (%v), want expireAfter 168h kept in %s", back.GetAnnotations(), err, conversion.V1FieldsAnnotationKey)
		}
		back.SetLabels(map[string]string{"karpenter.sh/nodepool": "expire-weekly", "edited": "through-v1beta1"})
		if _, err := dyn(t, "NodeClaim", "v1beta1").Update(context.Background(), back, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing the NodeClaim back through v1beta1: %v", err)
		}
		asV1 := get(t, "NodeClaim", nc.GetName(), "v1")
		if got := str(asV1, "spec.expireAfter"); got != "168h" {
			t.Errorf("v1 expireAfter after a write through v1beta1: %q, want 168h", got)
		}
		if got := asV1.GetLabels()["edited"]; got != "through-v1beta1" {
			t.Errorf("the label written through v1beta1 is %q", got)
		}
	})
}
