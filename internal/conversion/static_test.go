package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
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
			spoke, err := c.NodePoolToV1beta1(tc.in)
			if err != nil {
				t.Fatalf("NodePoolToV1beta1: %v", err)
			}
			if got := spoke.Annotations[V1FieldsAnnotationKey]; got != tc.wantAnnotation {
				t.Errorf("v1-fields annotation = %q, want %q", got, tc.wantAnnotation)
			}
			hub, err := c.NodePoolToV1(spoke)
			if err != nil {
				t.Fatalf("NodePoolToV1: %v", err)
			}
			if !equal(tc.in, hub) {
				t.Errorf("round trip changed the NodePool (-in +out):\n%s", cmp.Diff(tc.in, hub))
			}
		})
	}
}
