package kwok_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
)

// unavailable lists the offerings GetInstanceTypes reports unavailable.
func unavailable(t *testing.T, c *kwok.CloudProvider) []string {
	t.Helper()
	types, err := c.GetInstanceTypes(context.Background(), &v1.NodePool{})
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	out := []string{}
	for _, it := range types {
		for _, o := range it.Offerings {
			if !o.Available {
				out = append(out, kwok.OfferingID{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}.String())
			}
		}
	}
	return out
}

// TestInsufficientCapacity injects insufficient capacity into one offering:
// a claim that allows only that offering fails, the offering is reported
// unavailable until the TTL passes, and a claim with alternatives launches
// one of them.
func TestInsufficientCapacity(t *testing.T) {
	ctx := context.Background()
	failing := kwok.OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand}
	c, clk := newProvider(t, kwok.Options{InsufficientCapacity: kwok.FailOfferings(failing)})
	nodeClass := createNodeClass(t, nil)
	if got := unavailable(t, c); len(got) != 0 {
		t.Fatalf("unavailable offerings at start = %v, want none", got)
	}

	// 1. Only the failing offering is allowed: insufficient capacity, no Node.
	only := newClaim(nodeClass.Name, in(corev1.LabelInstanceTypeStable, "m5.large"),
		in(corev1.LabelTopologyZone, "us-east-1a"), in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand))
	if _, err := c.Create(ctx, only); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("Create = %v, want InsufficientCapacityError", err)
	}
	expectNoNode(t, only.Name)
	if diff := cmp.Diff([]string{failing.String()}, unavailable(t, c)); diff != "" {
		t.Errorf("unavailable offerings (-want +got):\n%s", diff)
	}

	// 2. A claim that also allows us-east-1b launches there.
	either := newClaim(nodeClass.Name, in(corev1.LabelInstanceTypeStable, "m5.large"),
		in(corev1.LabelTopologyZone, "us-east-1a", "us-east-1b"), in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand))
	created, err := c.Create(ctx, either)
	if err != nil {
		t.Fatalf("Create with an alternative: %v", err)
	}
	if got := created.Labels[corev1.LabelTopologyZone]; got != "us-east-1b" {
		t.Errorf("launched in %s, want us-east-1b", got)
	}

	// 3. Just before the TTL the offering is still unavailable; then it is back.
	clk.Step(kwok.UnavailableOfferingTTL - 1)
	if diff := cmp.Diff([]string{failing.String()}, unavailable(t, c)); diff != "" {
		t.Errorf("unavailable offerings just before the TTL (-want +got):\n%s", diff)
	}
	clk.Step(1)
	if got := unavailable(t, c); len(got) != 0 {
		t.Errorf("unavailable offerings after the TTL = %v, want none", got)
	}

	// 4. With capacity back, the first claim launches where it asked.
	c.SetInsufficientCapacity(nil)
	launched, err := c.Create(ctx, only)
	if err != nil {
		t.Fatalf("Create after the TTL: %v", err)
	}
	if got := launched.Labels[corev1.LabelTopologyZone]; got != "us-east-1a" {
		t.Errorf("launched in %s, want us-east-1a", got)
	}
}
