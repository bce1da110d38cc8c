package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// TestStaticNodePoolRoundTrip: v1beta1 has no replicas. v1 -> v1beta1 keeps
// a static pool's replicas (0 included) in the v1-fields annotation, and
// v1beta1 -> v1 gives them back, so a static pool read or written through
// v1beta1 stays static with the same count; a dynamic pool gets no
// annotation for it.
func TestStaticNodePoolRoundTrip(t *testing.T) {
	t.Parallel()
	c := &Converter{}
	cases := map[string]struct {
		in             *v1.NodePool
		wantAnnotation string
	}{
		"static, 3 replicas": {
			in:             v1Pool(func(np *v1.NodePool) { np.Spec.Replicas = ptr.To[int64](3) }),
			wantAnnotation: `{"replicas":3}`,
		},
		"static, scaled to zero, with limits.nodes": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Replicas = ptr.To[int64](0)
				np.Spec.Limits = v1.Limits{"nodes": resource.MustParse("4")}
			}),
			wantAnnotation: `{"replicas":0}`,
		},
		"dynamic": {
			in:             v1Pool(func(*v1.NodePool) {}),
			wantAnnotation: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			roundTripNodePool(t, c, tc.in, tc.wantAnnotation)
		})
	}
}

// roundTripNodePool converts a v1 NodePool to v1beta1 and back, checks the
// v1-fields annotation the v1beta1 object carries and that the round trip
// changed nothing, and returns the v1beta1 object for further checks.
func roundTripNodePool(t *testing.T, c *Converter, in *v1.NodePool, wantAnnotation string) *v1beta1.NodePool {
	t.Helper()
	spoke, err := c.NodePoolToV1beta1(in)
	if err != nil {
		t.Fatalf("NodePoolToV1beta1: %v", err)
	}
	if got := spoke.Annotations[V1FieldsAnnotationKey]; got != wantAnnotation {
		t.Errorf("v1-fields annotation = %q, want %q", got, wantAnnotation)
	}
	hub, err := c.NodePoolToV1(spoke)
	if err != nil {
		t.Fatalf("NodePoolToV1: %v", err)
	}
	if !equal(in, hub) {
		t.Errorf("round trip changed the NodePool (-in +out):\n%s", cmp.Diff(in, hub))
	}
	return spoke
}
