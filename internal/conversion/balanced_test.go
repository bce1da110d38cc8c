package conversion

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// TestBalancedRoundTrip: v1beta1 has no Balanced policy and no
// consolidationThreshold. v1 -> v1beta1 writes the closest v1beta1 policy
// (WhenUnderutilized) and keeps the v1 disruption block in the v1-fields
// annotation, so v1beta1 -> v1 gives back exactly what was written; an
// edit of the disruption block through v1beta1 wins, as for budget reasons.
func TestBalancedRoundTrip(t *testing.T) {
	t.Parallel()
	c := &Converter{}
	cases := map[string]struct {
		in             *v1.NodePool
		wantAnnotation string
	}{
		"Balanced with the default threshold": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
			}),
			wantAnnotation: `{"disruption":{"consolidateAfter":"0s","consolidationPolicy":"Balanced"}}`,
		},
		"Balanced with a threshold, a delay and budget reasons": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption = v1.Disruption{
					ConsolidationPolicy: v1.ConsolidationPolicyBalanced, ConsolidationThreshold: ptr.To[int32](3),
					ConsolidateAfter: duration("5m"),
					Budgets:          []v1.Budget{{Nodes: intstr.FromString("20%"), Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized}}},
				}
			}),
			wantAnnotation: `{"disruption":{"consolidateAfter":"5m","consolidationPolicy":"Balanced","consolidationThreshold":3,` +
				`"budgets":[{"reasons":["Underutilized"],"nodes":"20%"}]}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spoke := roundTripNodePool(t, c, tc.in, tc.wantAnnotation)
			if got := spoke.Spec.Disruption.ConsolidationPolicy; got != v1beta1.ConsolidationPolicyWhenUnderutilized {
				t.Errorf("v1beta1 consolidationPolicy = %q, want WhenUnderutilized", got)
			}
		})
	}

	t.Run("a v1beta1 edit of the disruption block wins", func(t *testing.T) {
		t.Parallel()
		spoke, err := c.NodePoolToV1beta1(v1Pool(func(np *v1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
			np.Spec.Disruption.ConsolidationThreshold = ptr.To[int32](1)
		}))
		if err != nil {
			t.Fatal(err)
		}
		spoke.Spec.Disruption.Budgets = []v1beta1.Budget{{Nodes: intstr.FromString("1")}}
		hub, err := c.NodePoolToV1(spoke)
		if err != nil {
			t.Fatal(err)
		}
		d := hub.Spec.Disruption
		if d.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized || d.ConsolidationThreshold != nil {
			t.Errorf("after a v1beta1 edit: policy %q threshold %v, want WhenEmptyOrUnderutilized and none", d.ConsolidationPolicy, d.ConsolidationThreshold)
		}
	})
}
