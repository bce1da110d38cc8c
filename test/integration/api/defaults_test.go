package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// created creates obj for real (not a dry run), deletes it at cleanup, and
// returns what the API server stored.
func created(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	obj.SetName(uniqueName(t, "stored"))
	if err := testEnv.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetKind(), err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, obj) })
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("reading %s back: %v", obj.GetKind(), err)
	}
	return got
}

func nested(t *testing.T, obj *unstructured.Unstructured, path string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	if err != nil || !found {
		t.Fatalf("%s not found in stored object (err %v)", path, err)
	}
	return v
}

// TestDefaults checks the defaults of the v1 document and Karpenter v1.
func TestDefaults(t *testing.T) {
	minimalNodePool := object(t, `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`)
	np := created(t, minimalNodePool)
	for path, want := range map[string]any{
		"spec.disruption.consolidationPolicy": "WhenEmptyOrUnderutilized",
		"spec.disruption.consolidateAfter":    "0s",
		"spec.disruption.budgets":             []any{map[string]any{"nodes": "10%"}},
		"spec.template.spec.expireAfter":      "720h",
	} {
		if diff := cmp.Diff(want, nested(t, np, path)); diff != "" {
			t.Errorf("NodePool default %s mismatch (-want +got):\n%s", path, diff)
		}
	}

	nc := created(t, object(t, baseNodeClaim))
	if diff := cmp.Diff("720h", nested(t, nc, "spec.expireAfter")); diff != "" {
		t.Errorf("NodeClaim default expireAfter mismatch (-want +got):\n%s", diff)
	}

	ec2 := created(t, object(t, baseEC2NodeClass))
	want := map[string]any{"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": int64(1), "httpTokens": "required"}
	if diff := cmp.Diff(want, nested(t, ec2, "spec.metadataOptions")); diff != "" {
		t.Errorf("EC2NodeClass default metadataOptions mismatch (-want +got):\n%s", diff)
	}
}

// TestBothPolicySpellingsAreAccepted checks that the v1 document's spelling
// (WhenUnderutilized, budget reason Expired) and the shipped one both apply.
func TestBothPolicySpellingsAreAccepted(t *testing.T) {
	for _, policy := range []string{"WhenUnderutilized", "WhenEmptyOrUnderutilized", "WhenEmpty"} {
		for _, reason := range []string{"Expired", "Underutilized", "Empty", "Drifted"} {
			obj := object(t, baseNodePool)
			obj.SetName(uniqueName(t, "spelling-"+strings.ToLower(policy+"-"+reason)))
			set("spec.disruption.consolidationPolicy", policy)(t, obj.Object)
			set("spec.disruption.budgets[0].reasons", []any{reason})(t, obj.Object)
			if err := dryRunCreate(obj); err != nil {
				t.Errorf("policy %s with budget reason %s rejected: %v", policy, reason, err)
			}
		}
	}
}

// TestNodeClaimSpecIsImmutable checks that a NodeClaim's spec cannot change
// after creation, while its labels can.
func TestNodeClaimSpecIsImmutable(t *testing.T) {
	ctx := context.Background()
	nc := created(t, object(t, baseNodeClaim))

	changed := nc.DeepCopy()
	set("spec.requirements[0].values", []any{"m5.xlarge"})(t, changed.Object)
	err := testEnv.Client.Update(ctx, changed)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("spec update: got %v, want an Invalid error saying the spec is immutable", err)
	}

	relabelled := nc.DeepCopy()
	relabelled.SetLabels(map[string]string{"team": "checkout"})
	if err := testEnv.Client.Update(ctx, relabelled); err != nil {
		t.Fatalf("label update rejected: %v", err)
	}
}
