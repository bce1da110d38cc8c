package api_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBalancedIsAccepted: consolidationPolicy Balanced (Karpenter v1.14)
// applies with or without Dovetail's consolidationThreshold, and the
// threshold is stored as written.
func TestBalancedIsAccepted(t *testing.T) {
	obj := object(t, baseNodePool)
	set("spec.disruption.consolidationPolicy", "Balanced")(t, obj.Object)
	np := created(t, obj)
	if got := nested(t, np, "spec.disruption.consolidationPolicy"); got != "Balanced" {
		t.Errorf("stored consolidationPolicy = %v, want Balanced", got)
	}
	for _, k := range []int64{1, 2, 3} {
		t.Run(fmt.Sprintf("threshold %d", k), func(t *testing.T) {
			obj := object(t, baseNodePool)
			set("spec.disruption.consolidationPolicy", "Balanced")(t, obj.Object)
			set("spec.disruption.consolidationThreshold", k)(t, obj.Object)
			np := created(t, obj)
			if diff := cmp.Diff(k, nested(t, np, "spec.disruption.consolidationThreshold")); diff != "" {
				t.Errorf("stored consolidationThreshold mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInvalidBalanced: a consolidationThreshold out of its bounds, of the
// wrong type, or beside another policy is rejected with the field named;
// v1beta1 has no Balanced.
func TestInvalidBalanced(t *testing.T) {
	const field = "spec.disruption.consolidationThreshold"
	balanced := set("spec.disruption.consolidationPolicy", "Balanced")
	cases := map[string]invalidCase{
		"threshold zero":           {baseNodePool, []mutation{balanced, set(field, 0)}, field, "greater than or equal to 1"},
		"threshold negative":       {baseNodePool, []mutation{balanced, set(field, -2)}, field, "greater than or equal to 1"},
		"threshold above 3":        {baseNodePool, []mutation{balanced, set(field, 4)}, field, "less than or equal to 3"},
		"threshold a word":         {baseNodePool, []mutation{balanced, set(field, "two")}, field, "must be of type integer"},
		"threshold a fraction":     {baseNodePool, []mutation{balanced, set(field, 1.5)}, field, "must be of type integer"},
		"threshold without policy": {baseNodePool, []mutation{set(field, 2)}, field, "may only be set with consolidationPolicy Balanced"},
		"unknown policy spelling":  {baseNodePool, []mutation{set("spec.disruption.consolidationPolicy", "balanced")}, "spec.disruption.consolidationPolicy", "Unsupported value"},
		"Balanced is v1 only":      {baseNodePoolV1beta1, []mutation{balanced}, "spec.disruption.consolidationPolicy", "Unsupported value"},
	}
	for _, policy := range []string{"WhenEmpty", "WhenEmptyOrUnderutilized", "WhenUnderutilized"} {
		cases[fmt.Sprintf("threshold with %s", policy)] = invalidCase{baseNodePool,
			[]mutation{set("spec.disruption.consolidationPolicy", policy), set(field, 2)}, field, "may only be set with consolidationPolicy Balanced"}
	}
	runInvalidCases(t, cases)
}
