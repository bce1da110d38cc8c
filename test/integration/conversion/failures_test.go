package conversion_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// expectConversionError fails the test unless err is the API server's
// report of a failed conversion whose message holds every part of want.
func expectConversionError(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want a conversion failure", what)
	}
	t.Logf("%s: %v", what, err)
	for _, part := range append([]string{"conversion webhook"}, want...) {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%s: error %q lacks %q", what, err, part)
		}
	}
}

// TestBadObjectsFailClearly writes objects whose compatibility annotations
// do not decode. The webhook answers with a failure naming the object and
// the annotation (no panic, no silently dropped settings), and keeps
// serving every other object.
func TestBadObjectsFailClearly(t *testing.T) {
	w := serveConversions(t)
	good := object(t, `{apiVersion: karpenter.sh/v1beta1, kind: NodeClaim, metadata: {name: good}, spec: {nodeClassRef: {name: default}, requirements: []}}`)
	create(t, good)

	t.Run("a v1beta1 NodeClaim with malformed v1-fields is not created", func(t *testing.T) {
		bad := object(t, `{apiVersion: karpenter.sh/v1beta1, kind: NodeClaim, metadata: {name: bad-v1-fields}, spec: {nodeClassRef: {name: default}, requirements: []}}`)
		bad.SetAnnotations(map[string]string{conversion.V1FieldsAnnotationKey: `{"expireAfter": `})
		_, err := tryCreate(t, bad)
		expectConversionError(t, "creating it", err, `NodeClaim "bad-v1-fields"`, conversion.V1FieldsAnnotationKey)
	})

	t.Run("a v1 NodeClaim with a malformed kubelet annotation does not read as v1beta1", func(t *testing.T) {
		bad := object(t, `{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: {name: bad-kubelet},
			spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: [], expireAfter: 720h}}`)
		bad.SetAnnotations(map[string]string{v1.KubeletCompatibilityAnnotationKey: `{"maxPods": "many"}`})
		c := dyn(t, "NodeClaim", "v1")
		if _, err := c.Create(context.Background(), bad, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating it as v1 (no conversion): %v", err)
		}
		_, err := dyn(t, "NodeClaim", "v1beta1").Get(context.Background(), bad.GetName(), metav1.GetOptions{})
		expectConversionError(t, "reading it as v1beta1", err, `NodeClaim "bad-kubelet"`, v1.KubeletCompatibilityAnnotationKey)
		// A v1beta1 list holds every NodeClaim, so it fails too and says
		// which one; v1 clients are not affected.
		_, err = dyn(t, "NodeClaim", "v1beta1").List(context.Background(), metav1.ListOptions{})
		expectConversionError(t, "listing NodeClaims as v1beta1", err, `NodeClaim "bad-kubelet"`)
		get(t, "NodeClaim", bad.GetName(), "v1")
		if err := c.Delete(context.Background(), bad.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting it: %v", err)
		}
		list, err := dyn(t, "NodeClaim", "v1beta1").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing NodeClaims as v1beta1 once it is gone: %v", err)
		}
		if !containsName(list.Items, good.GetName()) {
			t.Errorf("the v1beta1 list lacks NodeClaim %s", good.GetName())
		}
	})

	// Still serving, and still ready.
	get(t, "NodeClaim", good.GetName(), "v1beta1")
	if err := w.ready(nil); err != nil {
		t.Errorf("the webhook is not ready after the failures: %v", err)
	}
}

// containsName reports whether items hold an object named name.
func containsName(items []unstructured.Unstructured, name string) bool {
	for _, item := range items {
		if item.GetName() == name {
			return true
		}
	}
	return false
}
