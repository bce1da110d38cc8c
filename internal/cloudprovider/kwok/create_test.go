package kwok

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

func TestCandidates(t *testing.T) {
	c, _ := newTestProvider(t, Options{})
	q := resource.MustParse
	cases := map[string]struct {
		reqs     []v1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		want     []string
	}{
		"cheapest of the whole catalog": {
			want: []string{"t4g.nano/us-east-1a/spot", "t3a.nano/us-east-1c/spot", "t3.nano/us-east-1a/spot"},
		},
		"zone constraint": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelTopologyZone, "us-east-1a")},
			want: []string{"t4g.nano/us-east-1a/spot", "t3.nano/us-east-1a/spot", "t2.nano/us-east-1a/spot"},
		},
		"capacity-type constraint, equal prices ordered by zone": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand)},
			want: []string{"t4g.nano/us-east-1a/on-demand", "t4g.nano/us-east-1b/on-demand", "t4g.nano/us-east-1c/on-demand", "t3a.nano/us-east-1a/on-demand"},
		},
		"listed instance types only": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{
				in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large", "no-such.type"),
				in(corev1.LabelTopologyZone, "us-east-1b"),
			},
			want: []string{"c5.large/us-east-1b/spot", "m5.large/us-east-1b/spot", "c5.large/us-east-1b/on-demand", "m5.large/us-east-1b/on-demand"},
		},
		"seed NodePool requirements": {
			reqs: seedRequirements(),
			want: []string{"c7a.medium/us-east-1a/on-demand", "c7a.medium/us-east-1b/on-demand"},
		},
		"requests rule out types whose allocatable is smaller": {
			// c7a.medium has 1 vCPU, of which 940m is allocatable.
			reqs:     seedRequirements(),
			requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			want:     []string{"c6a.large/us-east-1a/on-demand"},
		},
		"requests only big types fit": {
			requests: corev1.ResourceList{corev1.ResourceCPU: q("100"), corev1.ResourceMemory: q("500Gi")},
			want:     []string{"r6a.32xlarge/us-east-1c/spot", "m8g.48xlarge/us-east-1c/spot"},
		},
		"extended resources": {
			requests: corev1.ResourceList{"nvidia.com/gpu": q("1")},
			want:     []string{"g5g.xlarge/us-east-1a/spot", "g5g.xlarge/us-east-1b/spot", "g4dn.xlarge/us-east-1a/spot"},
		},
		"well-known label the types lack rules them out": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{
				{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpExists},
				in(corev1.LabelArchStable, "amd64"),
			},
			want: []string{"g6f.large/us-east-1b/spot", "g6f.xlarge/us-east-1c/spot"},
		},
		"labels the types do not have are left to the NodePool": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{in("team", "a"), in(corev1.LabelInstanceTypeStable, "m5.large")},
			want: []string{"m5.large/us-east-1c/spot"},
		},
		"nothing fits": {
			requests: corev1.ResourceList{corev1.ResourceCPU: q("1000")},
		},
		"no offering in the zone": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelTopologyZone, "eu-west-1a")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ids(candidates(c.instanceTypeView(), parse(t, tc.reqs), tc.requests), len(tc.want))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("cheapest candidates (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLaunchMarksFailedOfferings injects insufficient capacity into the
// cheapest offerings: launch falls through to the next ones, and the failed
// ones stay unavailable for the TTL.
func TestLaunchMarksFailedOfferings(t *testing.T) {
	ctx := context.Background()
	m5 := func(zone, capacityType string) OfferingID {
		return OfferingID{InstanceType: "m5.large", Zone: zone, CapacityType: capacityType}
	}
	c, clk := newTestProvider(t, Options{InsufficientCapacity: FailOfferings(m5("us-east-1c", "spot"), m5("us-east-1b", "spot"))})
	reqs := parse(t, []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "m5.large")})

	got, err := c.launch(ctx, reqs, nil)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	if diff := cmp.Diff(m5("us-east-1a", "spot"), got.id()); diff != "" {
		t.Errorf("launched (-want +got):\n%s", diff)
	}
	wantUnavailable := []string{"m5.large/us-east-1b/spot", "m5.large/us-east-1c/spot"}
	if diff := cmp.Diff(wantUnavailable, unavailableOfferings(t, c, "m5.large")); diff != "" {
		t.Errorf("unavailable offerings (-want +got):\n%s", diff)
	}

	// Now only spot in us-east-1b and us-east-1c is allowed: both are cached
	// as unavailable, so nothing is tried and the launch fails at once.
	c.SetInsufficientCapacity(nil)
	zonal := parse(t, []v1.NodeSelectorRequirementWithMinValues{
		in(corev1.LabelInstanceTypeStable, "m5.large"), in(corev1.LabelTopologyZone, "us-east-1b", "us-east-1c"), in(v1.CapacityTypeLabelKey, "spot"),
	})
	if _, err := c.launch(ctx, zonal, nil); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("launch into cached offerings = %v, want insufficient capacity", err)
	}

	clk.Step(UnavailableOfferingTTL - 1)
	if diff := cmp.Diff(wantUnavailable, unavailableOfferings(t, c, "m5.large")); diff != "" {
		t.Errorf("unavailable offerings just before the TTL (-want +got):\n%s", diff)
	}
	clk.Step(1)
	if got := unavailableOfferings(t, c, "m5.large"); len(got) != 0 {
		t.Errorf("unavailable offerings after the TTL = %v, want none", got)
	}
	if got, err := c.launch(ctx, zonal, nil); err != nil || got.id() != m5("us-east-1c", "spot") {
		t.Errorf("launch after the TTL = %v, %v; want m5.large/us-east-1c/spot", got.id(), err)
	}
	// With the cache empty, the view is the shared list again.
	types, err := c.GetInstanceTypes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if types[0] != c.instanceTypes[0] {
		t.Error("GetInstanceTypes does not share the converted types once the cache is empty")
	}
}

func TestLaunchFailsWhenEveryOfferingFails(t *testing.T) {
	c, _ := newTestProvider(t, Options{InsufficientCapacity: func(OfferingID) bool { return true }})
	reqs := parse(t, []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large")})
	_, err := c.launch(context.Background(), reqs, nil)
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("launch = %v, want insufficient capacity", err)
	}
	for _, name := range []string{"m5.large", "c5.large"} {
		if got := unavailableOfferings(t, c, name); len(got) != 6 {
			t.Errorf("%s: unavailable offerings = %v, want all 6", name, got)
		}
	}
}

// TestGetInstanceTypesNarrowsRequirements checks that a type with cached
// offerings reports only what is left in its zone and capacity-type
// requirements, and that every type is returned, in name order.
func TestGetInstanceTypesNarrowsRequirements(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestProvider(t, Options{})
	for _, ct := range []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand} {
		c.markUnavailable(ctx, OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: ct})
	}
	c.markUnavailable(ctx, OfferingID{InstanceType: "m5.large", Zone: "us-east-1b", CapacityType: v1.CapacityTypeSpot})
	types, err := c.GetInstanceTypes(ctx, &v1.NodePool{})
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != len(c.instanceTypes) {
		t.Fatalf("GetInstanceTypes returned %d types, want all %d", len(types), len(c.instanceTypes))
	}
	for i := 1; i < len(types); i++ {
		if types[i-1].Name >= types[i].Name {
			t.Fatalf("types not in name order: %s before %s", types[i-1].Name, types[i].Name)
		}
	}
	m5 := types[slicesIndex(types, "m5.large")]
	got := map[string]string{}
	for _, key := range []string{corev1.LabelTopologyZone, v1.CapacityTypeLabelKey} {
		r, _ := m5.Requirements.Get(key)
		got[key] = r.String()
	}
	want := map[string]string{
		corev1.LabelTopologyZone: "topology.kubernetes.io/zone In [us-east-1b us-east-1c]",
		v1.CapacityTypeLabelKey:  "karpenter.sh/capacity-type In [on-demand spot]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("m5.large offering requirements (-want +got):\n%s", diff)
	}
	if m5 == c.instanceTypes[slicesIndex(c.instanceTypes, "m5.large")] {
		t.Error("the shared m5.large was returned, not a copy with unavailable offerings")
	}
	if !c.instanceTypes[slicesIndex(c.instanceTypes, "m5.large")].Offerings[0].Available {
		t.Error("marking an offering unavailable changed the shared instance type")
	}
}

// unavailableOfferings lists the unavailable offerings of the named type as
// GetInstanceTypes reports them.
func unavailableOfferings(t *testing.T, c *CloudProvider, name string) []string {
	t.Helper()
	types, err := c.GetInstanceTypes(context.Background(), nil)
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	i := slicesIndex(types, name)
	if i < 0 {
		t.Fatalf("GetInstanceTypes has no %s", name)
	}
	var out []string
	for _, o := range types[i].Offerings {
		if !o.Available {
			out = append(out, OfferingID{InstanceType: name, Zone: o.Zone, CapacityType: o.CapacityType}.String())
		}
	}
	return out
}

// slicesIndex returns the index of the named type, or -1.
func slicesIndex(types []*cloudprovider.InstanceType, name string) int {
	for i, it := range types {
		if it.Name == name {
			return i
		}
	}
	return -1
}
