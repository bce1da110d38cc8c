package kwok

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// epoch is the fake clocks' start.
func epoch() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }

// newTestProvider builds a provider without a client, on a fake clock, for
// the parts that never reach the API server (choice, cache, view).
func newTestProvider(t *testing.T, opts Options) (*CloudProvider, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch())
	c, err := New(nil, clk, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, clk
}

// in is the NodePool requirement "key In values".
func in(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// seedRequirements are the requirements of the general-purpose NodePool of
// the Karpenter documentation, as users write them.
func seedRequirements() []v1.NodeSelectorRequirementWithMinValues {
	return []v1.NodeSelectorRequirementWithMinValues{
		in(corev1.LabelArchStable, "amd64"),
		in(corev1.LabelOSStable, "linux"),
		in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand),
		in("karpenter.k8s.aws/instance-category", "c", "m", "r"),
		{Key: "karpenter.k8s.aws/instance-generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
	}
}

// parse converts NodePool requirements, failing the test on error.
func parse(t *testing.T, reqs []v1.NodeSelectorRequirementWithMinValues) requirements.Requirements {
	t.Helper()
	r, err := requirements.FromNodePoolRequirements(reqs)
	if err != nil {
		t.Fatalf("parsing requirements: %v", err)
	}
	return r
}

// ids names candidates' offerings, at most n of them.
func ids(cands []candidate, n int) []string {
	var out []string
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.id().String())
	}
	return out
}
