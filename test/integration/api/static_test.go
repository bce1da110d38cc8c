package api_test

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// TestStaticNodePoolIsAccepted: replicas (Karpenter v1.8) applies alone or
// with limits.nodes, zero included, and is stored as written.
func TestStaticNodePoolIsAccepted(t *testing.T) {
	for name, muts := range map[string][]mutation{
		"replicas 3":                {set("spec.replicas", 3)},
		"replicas 0":                {set("spec.replicas", 0)},
		"replicas with nodes":       {set("spec.replicas", 3), set("spec.limits", map[string]any{"nodes": "5"})},
		"replicas and empty limits": {set("spec.replicas", 2), set("spec.limits", map[string]any{})},
	} {
		t.Run(name, func(t *testing.T) {
			obj := object(t, baseNodePool)
			for _, m := range muts {
				m(t, obj.Object)
			}
			want := obj.Object["spec"].(map[string]any)["replicas"]
			np := created(t, obj)
			if got := nested(t, np, "spec.replicas"); got != want {
				t.Errorf("stored replicas = %v, want %v", got, want)
			}
		})
	}
}

// TestInvalidStaticNodePools: the fields that make no sense with replicas
// are rejected at creation with the field named, as Karpenter rejects them.
func TestInvalidStaticNodePools(t *testing.T) {
	static := set("spec.replicas", 3)
	cases := map[string]invalidCase{
		"negative replicas":       {baseNodePool, []mutation{set("spec.replicas", -1)}, "spec.replicas", "greater than or equal to 0"},
		"replicas a word":         {baseNodePool, []mutation{set("spec.replicas", "three")}, "spec.replicas", "must be of type integer"},
		"replicas with weight":    {baseNodePool, []mutation{static, set("spec.weight", 10)}, "spec.weight", "weight may not be set on a static NodePool"},
		"replicas with cpu limit": {baseNodePool, []mutation{static, set("spec.limits", map[string]any{"cpu": "100"})}, "spec.limits", "only limits.nodes may be set on a static NodePool"},
		"replicas with cpu and nodes limits": {baseNodePool, []mutation{static, set("spec.limits", map[string]any{"nodes": "4", "memory": "10Gi"})},
			"spec.limits", "only limits.nodes may be set on a static NodePool"},
	}
	runInvalidCases(t, cases)
}

// TestStaticDynamicSwitchIsRejected: replicas can be changed (directly or
// through the scale subresource) but never added to a dynamic pool nor
// removed from a static one; the error names spec.replicas.
func TestStaticDynamicSwitchIsRejected(t *testing.T) {
	ctx := context.Background()
	const msg = "a NodePool cannot switch between static (replicas set) and dynamic (replicas unset)"
	update := func(t *testing.T, np *unstructured.Unstructured, m mutation) error {
		t.Helper()
		changed := np.DeepCopy()
		m(t, changed.Object)
		return testEnv.Client.Update(ctx, changed)
	}
	wantSwitchError := func(t *testing.T, err error) {
		t.Helper()
		if err == nil || !apierrors.IsInvalid(err) {
			t.Fatalf("update: got %v, want an Invalid error", err)
		}
		if !strings.Contains(err.Error(), "spec.replicas") || !strings.Contains(err.Error(), msg) {
			t.Errorf("error does not name spec.replicas and say %q:\n%v", msg, err)
		}
	}

	t.Run("dynamic to static", func(t *testing.T) {
		np := created(t, object(t, baseNodePool))
		wantSwitchError(t, update(t, np, set("spec.replicas", 2)))
	})
	t.Run("static to dynamic", func(t *testing.T) {
		obj := object(t, baseNodePool)
		set("spec.replicas", 2)(t, obj.Object)
		np := created(t, obj)
		wantSwitchError(t, update(t, np, del("spec.replicas")))
	})
	t.Run("scaling a static pool", func(t *testing.T) {
		obj := object(t, baseNodePool)
		set("spec.replicas", 2)(t, obj.Object)
		np := created(t, obj)
		if err := update(t, np, set("spec.replicas", 5)); err != nil {
			t.Fatalf("changing replicas: %v", err)
		}
		typed := typedNodePool(t, np)
		scale := &autoscalingv1.Scale{}
		if err := testEnv.Client.SubResource("scale").Get(ctx, typed, scale); err != nil {
			t.Fatalf("reading the scale subresource: %v", err)
		}
		if scale.Spec.Replicas != 5 {
			t.Errorf("scale spec.replicas = %d, want 5", scale.Spec.Replicas)
		}
		scale.Spec.Replicas = 1
		if err := testEnv.Client.SubResource("scale").Update(ctx, typed, client.WithSubResourceBody(scale)); err != nil {
			t.Fatalf("scaling through the scale subresource: %v", err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(np.GroupVersionKind())
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			t.Fatal(err)
		}
		if r := nested(t, got, "spec.replicas"); r != int64(1) {
			t.Errorf("replicas after kubectl-scale = %v, want 1", r)
		}
	})
	t.Run("scaling a dynamic pool", func(t *testing.T) {
		typed := typedNodePool(t, created(t, object(t, baseNodePool)))
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: typed.Name}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
		err := testEnv.Client.SubResource("scale").Update(ctx, typed, client.WithSubResourceBody(scale))
		if err == nil {
			t.Fatal("kubectl scale on a dynamic NodePool was accepted")
		}
		if !strings.Contains(err.Error(), "spec.replicas") {
			t.Errorf("error does not name spec.replicas: %v", err)
		}
		if got := typedNodePool(t, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": typed.Name}}}); got.Spec.Replicas != nil {
			t.Errorf("dynamic NodePool got replicas %d", *got.Spec.Replicas)
		}
	})
}

// typedNodePool reads the stored NodePool as the v1 type, which the
// scale subresource client needs.
func typedNodePool(t *testing.T, np *unstructured.Unstructured) *v1.NodePool {
	t.Helper()
	typed := &v1.NodePool{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKeyFromObject(np), typed); err != nil {
		t.Fatalf("reading NodePool %s: %v", np.GetName(), err)
	}
	return typed
}
