package disruption_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
)

// balancedPool creates a Ready NodePool with consolidationPolicy Balanced
// that launches on-demand nodes only (so that a replacement's price is the
// on-demand one): small $0.10/h (2 cpu), medium $0.20 (4), large $0.40 (8).
func (h *harness) balancedPool(name string) *v1.NodePool {
	h.t.Helper()
	return h.pool(name, func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		}
	})
}

// TestBalancedRejectsAPoorMoveAndApprovesAWorthwhileOne: on a Balanced pool
// of two large nodes, replacing node a (four pods of 750m) by a medium
// saves 25% of the pool's cost for 71% of its disruption cost (score 0.35,
// below 1/2): it is rejected, with the score in ConsolidationRejected
// events, and a is left alone. Once three of the pods are gone, replacing a
// by a small saves 37.5% for 50% (score 0.75): it is approved and, after
// validation, carried out.
func TestBalancedRejectsAPoorMoveAndApprovesAWorthwhileOne(t *testing.T) {
	h := newHarness(t, nil)
	np := h.balancedPool("balanced")
	nc, node := h.node("a", np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	_, busy := h.node("b", np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	for i := range 4 {
		h.pod(fmt.Sprintf("p%d", i), "web", node.Name, "750m")
	}
	h.pod("big", "db", busy.Name, "7")
	h.clock.Step(time.Minute)

	// 1. The poor move is rejected.
	if wait := h.decide(); wait != h.opts.PollPeriod {
		t.Fatalf("next pass in %v, want the poll period (no decision)", wait)
	}
	const rejected = "Balanced consolidation score 0.35 < threshold 0.50 (consolidationThreshold 2, savings 25.0% of the pool's cost, " +
		"disruption 71.4% of the pool's disruption cost): Underutilized: replacing 1 node (large; $0.400/h) with 1 node (medium; $0.200/h)"
	h.expectEvent("ConsolidationRejected", nc.Name, rejected)
	h.expectEvent("ConsolidationRejected", node.Name, rejected)
	if h.get(node); tainted(node) {
		t.Fatal("node tainted although its move was rejected")
	}
	if n := len(h.replacements(nc.Name)); n != 0 {
		t.Fatalf("%d replacements launched for a rejected move", n)
	}
	if got := counterValue(t, h.metrics.Consolidation.Moves.WithLabelValues("rejected", np.Name, "Balanced")); got != 1 {
		t.Errorf("consolidation_moves_total{rejected} = %v, want 1", got)
	}

	// 2. Three pods go: deleting a is worth it.
	for i := 1; i < 4; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: h.ns}}
		if err := h.direct.Delete(h.ctx, pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Step(time.Minute)
	if wait := h.decide(); wait != h.opts.ValidationDelay {
		t.Fatalf("next pass in %v, want the validation delay (a decision)", wait)
	}
	h.expectEvent("ConsolidationApproved", nc.Name, "Balanced consolidation score 0.75 >= threshold 0.50 (consolidationThreshold 2, "+
		"savings 37.5% of the pool's cost, disruption 50.0% of the pool's disruption cost): "+
		"Underutilized: replacing 1 node (large; $0.400/h) with 1 node (small; $0.100/h)")
	if got := counterValue(t, h.metrics.Consolidation.Moves.WithLabelValues("approved", np.Name, "Balanced")); got != 1 {
		t.Errorf("consolidation_moves_total{approved} = %v, want 1", got)
	}
	// After validation the move is carried out: a is tainted and its
	// replacement launched.
	h.clock.Step(h.opts.ValidationDelay)
	h.decide()
	repl := h.expectStarted(nc, node, v1.DisruptionReasonUnderutilized)
	h.expectEvent("DisruptionLaunching", nc.Name, "Launching NodeClaim "+repl.Name)
}

// TestBalancedThresholdIsPerNodePool: the same poor move (score 0.35) is
// made on a pool whose consolidationThreshold is 3 (threshold 1/3).
func TestBalancedThresholdIsPerNodePool(t *testing.T) {
	h := newHarness(t, nil)
	np := h.balancedPool("balanced")
	np.Spec.Disruption.ConsolidationThreshold = ptr.To[int32](3)
	if err := h.direct.Update(h.ctx, np); err != nil {
		t.Fatalf("setting consolidationThreshold: %v", err)
	}
	nc, node := h.node("a", np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	_, busy := h.node("b", np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	for i := range 4 {
		h.pod(fmt.Sprintf("p%d", i), "web", node.Name, "750m")
	}
	h.pod("big", "db", busy.Name, "7")
	h.clock.Step(time.Minute)

	if wait := h.decide(); wait != h.opts.ValidationDelay {
		t.Fatalf("next pass in %v, want the validation delay (a decision)", wait)
	}
	h.expectEvent("ConsolidationApproved", nc.Name, "Balanced consolidation score 0.35 >= threshold 0.33 (consolidationThreshold 3")
}

// TestBudgetHoldsANodeUntilItsWindow: an empty node that a scheduled budget
// of zero holds back gets an event naming the budget and when its window
// opens; once the window has opened, the node is deleted.
func TestBudgetHoldsANodeUntilItsWindow(t *testing.T) {
	h := newHarness(t, nil)
	start := h.clock.Now().UTC().Truncate(time.Minute)
	schedule := fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour())
	np := h.pool("default", func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets = []v1.Budget{
			{Nodes: intstr.FromString("100%")},
			{Nodes: intstr.FromString("0"), Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}, Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}},
		}
	})
	nc, node := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	h.clock.Step(time.Minute)

	if wait := h.decide(); wait != h.opts.PollPeriod {
		t.Fatalf("next pass in %v, want the poll period (no decision)", wait)
	}
	opens := start.Add(time.Hour).Format(time.RFC3339)
	want := fmt.Sprintf(`Disruption for reason Empty held by NodePool default's budget 1 (nodes "0", reasons [Empty], schedule %q for 1h0m0s): `+
		"allows 0 of 1 nodes now, 0 taken by disruptions in progress or this decision; its disruption window opens at %s", schedule, opens)
	h.expectEvent("DisruptionBlocked", node.Name, want)
	h.expectEvent("DisruptionBlocked", nc.Name, want)
	h.expectEvent("DisruptionBlocked", np.Name, "No allowed disruptions for disruption reason Empty due to blocking budget")

	// The window opens: the node goes (after the validation delay).
	h.clock.SetTime(start.Add(time.Hour))
	if wait := h.decide(); wait != h.opts.ValidationDelay {
		t.Fatalf("next pass in %v once the window opened, want the validation delay (a decision)", wait)
	}
	h.clock.Step(h.opts.ValidationDelay)
	h.decide()
	if h.get(nc); nc.DeletionTimestamp == nil {
		t.Fatal("empty node not deleted once its budget's window opened")
	}
}
