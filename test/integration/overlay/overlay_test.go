package overlay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestCRDRejectsBadOverlays: the API server refuses what Karpenter's CRD
// refuses, and the error names the field.
func TestCRDRejectsBadOverlays(t *testing.T) {
	ctx := context.Background()
	spot := []v1alpha1.NodeSelectorRequirement{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}}
	for _, tc := range []struct {
		name string
		spec v1alpha1.NodeOverlaySpec
		want []string // substrings of the error
	}{
		{"price and priceAdjustment", v1alpha1.NodeOverlaySpec{Requirements: spot, Price: ptr.To("1"), PriceAdjustment: ptr.To("-1")},
			[]string{"spec", "cannot set both 'price' and 'priceAdjustment'"}},
		{"unsigned priceAdjustment", v1alpha1.NodeOverlaySpec{Requirements: spot, PriceAdjustment: ptr.To("10%")}, []string{"spec.priceAdjustment"}},
		{"priceAdjustment below -100%", v1alpha1.NodeOverlaySpec{Requirements: spot, PriceAdjustment: ptr.To("-101%")}, []string{"spec.priceAdjustment"}},
		{"words in priceAdjustment", v1alpha1.NodeOverlaySpec{Requirements: spot, PriceAdjustment: ptr.To("-ten")}, []string{"spec.priceAdjustment"}},
		{"signed price", v1alpha1.NodeOverlaySpec{Requirements: spot, Price: ptr.To("-0.5")}, []string{"spec.price"}},
		{"cpu in capacity", v1alpha1.NodeOverlaySpec{Requirements: spot, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			[]string{"spec.capacity", "only name extended resources"}},
		{"pods in capacity", v1alpha1.NodeOverlaySpec{Requirements: spot, Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
			[]string{"spec.capacity"}},
		{"weight 0", v1alpha1.NodeOverlaySpec{Requirements: spot, Weight: ptr.To[int32](0)}, []string{"spec.weight"}},
		{"weight 10001", v1alpha1.NodeOverlaySpec{Requirements: spot, Weight: ptr.To[int32](10001)}, []string{"spec.weight"}},
		{"In without values", v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "team", Operator: corev1.NodeSelectorOpIn}}},
			[]string{"spec.requirements[0]", "must have a value defined"}},
		{"Gt with a word", v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{
			{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"four"}}}},
			[]string{"spec.requirements[0]", "single positive integer"}},
		{"unknown operator", v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "team", Operator: "Near", Values: []string{"a"}}}},
			[]string{"spec.requirements[0].operator"}},
		{"hostname", v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpExists}}}, []string{"spec.requirements[0].key", "kubernetes.io/hostname"}},
		{"karpenter.sh domain", v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{
			{Key: "karpenter.sh/registered", Operator: corev1.NodeSelectorOpExists}}}, []string{"spec.requirements[0].key", "karpenter.sh"}},
		{"no requirements field", v1alpha1.NodeOverlaySpec{}, []string{"spec.requirements"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			no := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tc.spec}
			err := testEnv.Client.Create(ctx, no)
			if err == nil {
				_ = testEnv.Client.Delete(ctx, no)
				t.Fatal("the API server accepted the overlay")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	// What the CRD accepts.
	for i, spec := range []v1alpha1.NodeOverlaySpec{
		{Requirements: spot, PriceAdjustment: ptr.To("-10%"), Weight: ptr.To[int32](1)},
		{Requirements: spot, PriceAdjustment: ptr.To("+1.5")},
		{Requirements: spot, PriceAdjustment: ptr.To("-100%")},
		{Requirements: spot, Price: ptr.To("0.25"), Weight: ptr.To[int32](10000)},
		{Requirements: []v1alpha1.NodeSelectorRequirement{{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
			{Key: "karpenter.k8s.aws/instance-cpu", Operator: v1.NodeSelectorOpGte, Values: []string{"4"}}},
			Capacity: corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}},
	} {
		no := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "good-" + string(rune('a'+i))}, Spec: spec}
		if err := testEnv.Client.Create(ctx, no); err != nil {
			t.Errorf("valid overlay %d rejected: %v", i, err)
			continue
		}
		_ = testEnv.Client.Delete(ctx, no)
	}
}

// TestDiscountedFamilyWinsTheLaunch: c5.xlarge is cheaper than m5.xlarge
// on EC2's prices and is launched; an overlay halving the m5 family's price
// makes the provisioner and the launch take m5.xlarge, and the NodeClaim
// says a price overlay applied. The provider's own instance types keep
// their prices.
func TestDiscountedFamilyWinsTheLaunch(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	np := h.pool(t, "c5.xlarge", "m5.xlarge")
	c5, err := h.price(ctx, np, "c5.xlarge")
	if err != nil {
		t.Fatal(err)
	}
	m5, err := h.price(ctx, np, "m5.xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if c5 <= 0 || m5 <= c5 || m5/2 >= c5 {
		t.Fatalf("catalog prices c5.xlarge %v, m5.xlarge %v: the test needs c5 < m5 < 2*c5", c5, m5)
	}

	// 1. Without an overlay the cheaper c5.xlarge is launched.
	h.pendingPod(t, cpu("2"))
	claims := h.provision(t)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	created := h.launch(t, &claims[0])
	if got := created.Labels[corev1.LabelInstanceTypeStable]; got != "c5.xlarge" {
		t.Errorf("launched %s without an overlay, want c5.xlarge", got)
	}
	if _, ok := created.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey]; ok {
		t.Error("a claim without overlays is annotated price-overlay-applied")
	}
	testEnv.RemoveClusterScoped(t)

	// 2. Halve the m5 family's price.
	createOverlay(t, "m5-discount", v1alpha1.NodeOverlaySpec{Requirements: family("m5"), PriceAdjustment: ptr.To("-50%")})
	np = h.pool(t, "c5.xlarge", "m5.xlarge")
	env.Eventually(t, 30*time.Second, "the overlaid m5.xlarge price", func(ctx context.Context) (bool, error) {
		got, err := h.price(ctx, np, "m5.xlarge")
		return got == m5/2, err
	})
	env.Eventually(t, 30*time.Second, "the overlay to be Ready", func(ctx context.Context) (bool, error) {
		c, err := condition(ctx, "m5-discount", v1alpha1.ConditionTypeReady)
		return c != nil && c.Status == metav1.ConditionTrue, err
	})
	h.pendingPod(t, cpu("2"))
	claims = h.provision(t)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	created = h.launch(t, &claims[0])
	if got := created.Labels[corev1.LabelInstanceTypeStable]; got != "m5.xlarge" {
		t.Errorf("launched %s with the m5 discount, want m5.xlarge", got)
	}
	if got := created.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey]; got != "true" {
		t.Errorf("annotation %s=%q, want true", v1alpha1.PriceOverlayAppliedAnnotationKey, got)
	}
	// The provider's own types (shared, cached) are unchanged.
	raw, err := h.raw.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range raw {
		if it.Name != "m5.xlarge" {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == "us-east-1a" && o.CapacityType == v1.CapacityTypeOnDemand && o.Price != m5 {
				t.Errorf("the provider's m5.xlarge price became %v, want %v", o.Price, m5)
			}
		}
	}
}

// TestExtendedResourceOverlay: no instance type has example.com/fpga, so a
// pod requesting it gets no NodeClaim; an overlay adding it to the c5
// family gets the pod a c5 NodeClaim, launched as a Node that advertises
// the resource in capacity and allocatable.
func TestExtendedResourceOverlay(t *testing.T) {
	h := newHarness(t)
	np := h.pool(t, "c5.xlarge", "m5.xlarge")
	requests := cpu("1")
	requests["example.com/fpga"] = resource.MustParse("1")
	h.pendingPod(t, requests)
	if claims := h.provision(t); len(claims) != 0 {
		t.Fatalf("%d NodeClaims for a pod no instance type can serve, want 0", len(claims))
	}

	createOverlay(t, "fpga", v1alpha1.NodeOverlaySpec{Requirements: family("c5"),
		Capacity: corev1.ResourceList{"example.com/fpga": resource.MustParse("2")}})
	env.Eventually(t, 30*time.Second, "the overlaid capacity", func(ctx context.Context) (bool, error) {
		its, err := h.provider.GetInstanceTypes(ctx, np)
		if err != nil {
			return false, err
		}
		for _, it := range its {
			if it.Name == "c5.xlarge" {
				_, ok := it.Allocatable()["example.com/fpga"]
				return ok, nil
			}
		}
		return false, nil
	})
	claims := h.provision(t)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	for _, r := range claims[0].Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && (len(r.Values) != 1 || r.Values[0] != "c5.xlarge") {
			t.Errorf("instance-type options %v, want only c5.xlarge (m5 has no fpga)", r.Values)
		}
	}
	created := h.launch(t, &claims[0])
	if got := created.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey]; got != "true" {
		t.Errorf("annotation %s=%q, want true", v1alpha1.CapacityOverlayAppliedAnnotationKey, got)
	}
	if q := created.Status.Allocatable["example.com/fpga"]; q.Value() != 2 {
		t.Errorf("claim allocatable fpga %s, want 2", q.String())
	}
	node := &corev1.Node{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: created.Name}, node); err != nil {
		t.Fatalf("the launched Node: %v", err)
	}
	for what, list := range map[string]corev1.ResourceList{"capacity": node.Status.Capacity, "allocatable": node.Status.Allocatable} {
		if q := list["example.com/fpga"]; q.Value() != 2 {
			t.Errorf("node %s fpga %s, want 2", what, q.String())
		}
	}
}

// TestConflictCondition: two overlays of the same weight that both price
// the c5 family conflict; the one whose name sorts last applies, the other
// says Conflict naming it, and the decorator applies only the first. A
// higher weight wins without a conflict; an overlay the schema lets
// through but that cannot be parsed says RuntimeValidation, naming the field.
func TestConflictCondition(t *testing.T) {
	h := newHarness(t)
	np := h.pool(t, "c5.xlarge", "m5.xlarge")
	createOverlay(t, "alpha", v1alpha1.NodeOverlaySpec{Requirements: family("c5"), Price: ptr.To("0.011"), Weight: ptr.To[int32](5)})
	createOverlay(t, "beta", v1alpha1.NodeOverlaySpec{Requirements: family("c5", "m5"), Price: ptr.To("0.022"), Weight: ptr.To[int32](5)})
	createOverlay(t, "gamma", v1alpha1.NodeOverlaySpec{Requirements: family("m5"), Price: ptr.To("0.033"), Weight: ptr.To[int32](6)})
	createOverlay(t, "overflow", v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{
		{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"99999999999999999999"}}}, Price: ptr.To("1")})

	// expect waits for both conditions: the reason of a True condition is
	// its type, of a False one the reason given.
	expect := func(name string, status metav1.ConditionStatus, reason string, inMessage ...string) {
		t.Helper()
		env.Eventually(t, 30*time.Second, name+" "+string(status)+" "+reason, func(ctx context.Context) (bool, error) {
			for _, ct := range []string{v1alpha1.ConditionTypeValidationSucceeded, v1alpha1.ConditionTypeReady} {
				want := reason
				if status == metav1.ConditionTrue {
					want = ct
				}
				c, err := condition(ctx, name, ct)
				if err != nil || c == nil || c.Status != status || c.Reason != want {
					return false, err
				}
				for _, s := range inMessage {
					if !strings.Contains(c.Message, s) {
						return false, nil
					}
				}
			}
			return true, nil
		})
	}
	expect("beta", metav1.ConditionTrue, "")
	expect("gamma", metav1.ConditionTrue, "")
	expect("alpha", metav1.ConditionFalse, v1alpha1.ReasonConflict, `"beta"`, "instance type c5.")
	expect("overflow", metav1.ConditionFalse, v1alpha1.ReasonRuntimeValidation, "spec.requirements[0]")

	// The decorator applies beta to c5, gamma (higher weight) to m5.
	env.Eventually(t, 30*time.Second, "the resolved prices", func(ctx context.Context) (bool, error) {
		c5, err := h.price(ctx, np, "c5.xlarge")
		if err != nil {
			return false, err
		}
		m5, err := h.price(ctx, np, "m5.xlarge")
		return c5 == 0.022 && m5 == 0.033, err
	})

	// Deleting the winner lets alpha apply.
	if err := testEnv.Client.Delete(context.Background(), &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "beta"}}); err != nil {
		t.Fatal(err)
	}
	expect("alpha", metav1.ConditionTrue, "")
	env.Eventually(t, 30*time.Second, "alpha's price", func(ctx context.Context) (bool, error) {
		c5, err := h.price(ctx, np, "c5.xlarge")
		return c5 == 0.011, err
	})
}
