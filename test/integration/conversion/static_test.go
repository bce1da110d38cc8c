package conversion_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// staticPool is a static v1 NodePool: three replicas, limited to five nodes.
const staticPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  replicas: 3
  limits: {nodes: "5"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      expireAfter: 720h`

// dynamicPool is a dynamic v1 NodePool.
const dynamicPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      expireAfter: 720h`

// staticV1beta1WithWeight is a static NodePool written as v1beta1, replicas
// in the v1-fields annotation, with a weight a static pool may not have.
const staticV1beta1WithWeight = `
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  annotations: {compatibility.karpenter.sh/v1-fields: '{"replicas":3}'}
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {name: default}
      requirements: []`

// TestStaticPoolRulesHoldThroughV1beta1 writes static and dynamic NodePools
// through v1beta1, whose schema has no replicas (v1beta1 carries them in
// the v1-fields annotation) and so none of the v1 CRD's rules about them:
// the API server validates a custom resource against the schema of the
// request's version. A v1beta1 write that would store a pool breaking
// those rules must be rejected, naming the field, as the same write
// through v1 is; the pool stored stays as it was.
//
// The rules hold through the ValidatingAdmissionPolicy that crdinstall
// installs with the CRDs (internal/crdinstall/policies); the API server
// enforces a policy a moment after it is written, so the test first waits
// until a dry run of a bad create is rejected.
func TestStaticPoolRulesHoldThroughV1beta1(t *testing.T) {
	serveConversions(t)
	probe := object(t, staticV1beta1WithWeight)
	probe.SetName("static-probe")
	env.Eventually(t, time.Minute, "the API server to enforce the static NodePool policy", func(ctx context.Context) (bool, error) {
		_, err := dyn(t, "NodePool", "v1beta1").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "spec.weight"), nil
	})
	cases := map[string]struct {
		manifest string
		// change is made to the object read through v1beta1, which is then
		// written back through v1beta1.
		change edit
		// want are parts of the rejection's message.
		want []string
	}{
		"dropping the v1-fields annotation of a static pool": {
			manifest: staticPool,
			change: func(_ *testing.T, obj *unstructured.Unstructured) {
				annotations := obj.GetAnnotations()
				delete(annotations, conversion.V1FieldsAnnotationKey)
				obj.SetAnnotations(annotations)
			},
			want: []string{"spec.replicas", "static"},
		},
		"adding weight to a static pool": {
			manifest: staticPool,
			change:   setField("spec.weight", 10),
			want:     []string{"spec.weight", "static"},
		},
		"adding a cpu limit to a static pool": {
			manifest: staticPool,
			change:   setField("spec.limits.cpu", "10"),
			want:     []string{"spec.limits", "static"},
		},
		"adding replicas to a dynamic pool": {
			manifest: dynamicPool,
			change:   setAnnotation(conversion.V1FieldsAnnotationKey, `{"replicas":3}`),
			want:     []string{"spec.replicas", "static"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.manifest)
			obj.SetName("static-" + dnsLabel(name))
			created := create(t, obj)

			read := get(t, "NodePool", obj.GetName(), "v1beta1")
			tc.change(t, read)
			_, err := dyn(t, "NodePool", "v1beta1").Update(context.Background(), read, metav1.UpdateOptions{})
			stored := get(t, "NodePool", obj.GetName(), "v1")
			if err == nil {
				t.Fatalf("the write through v1beta1 was accepted; stored as v1:\n%s", specOf(t, stored))
			}
			t.Logf("the write through v1beta1 was rejected: %v", err)
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("the rejection %q lacks %q", err, part)
				}
			}
			expectSame(t, "the pool after the rejected write", created, stored)
		})
	}

	t.Run("creating a static pool with weight", func(t *testing.T) {
		obj := object(t, staticV1beta1WithWeight)
		obj.SetName("static-created-with-weight")
		created, err := tryCreate(t, obj)
		if err == nil {
			t.Fatalf("the create through v1beta1 was accepted; stored as v1:\n%s", specOf(t, get(t, "NodePool", created.GetName(), "v1")))
		}
		t.Logf("the create through v1beta1 was rejected: %v", err)
		if !strings.Contains(err.Error(), "spec.weight") {
			t.Errorf("the rejection %q lacks %q", err, "spec.weight")
		}
	})

	t.Run("an edit of a static pool that keeps the rules is accepted", func(t *testing.T) {
		obj := object(t, staticPool)
		obj.SetName("static-allowed-edit")
		create(t, obj)
		read := get(t, "NodePool", obj.GetName(), "v1beta1")
		setField("spec.limits.nodes", "7")(t, read)
		if _, err := dyn(t, "NodePool", "v1beta1").Update(context.Background(), read, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing through v1beta1: %v", err)
		}
		if got := str(get(t, "NodePool", obj.GetName(), "v1"), "spec.limits.nodes"); got != "7" {
			t.Errorf("spec.limits.nodes read as v1 is %q, want 7", got)
		}
	})
}

// specOf returns obj's replicas, weight and limits as YAML, for a failure
// message.
func specOf(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	shown := map[string]any{}
	for _, key := range []string{"replicas", "weight", "limits"} {
		shown[key] = spec[key]
	}
	out, err := yaml.Marshal(shown)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
