package disruption_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// steppingClock is a fake clock that moves forward by step every time it is
// read, so that a method's time bound runs out after a known number of
// simulations.
type steppingClock struct {
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestConsolidationTimeouts: when a method's time bound runs out, the
// search stops, the method is reported as timed out, and the methods'
// durations are measured on the injected clock.
func TestConsolidationTimeouts(t *testing.T) {
	np := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	var nodes []*machine.Machine
	for i := range 6 {
		// Each node's pod needs a large node: nothing consolidates.
		nodes = append(nodes, makeNode(fmt.Sprintf("n%d", i), np, catalog()[2], zoneA, v1.CapacityTypeOnDemand).
			pods(pod(fmt.Sprintf("p%d", i), "web", "7")).obj())
	}
	clk := &steppingClock{now: now, step: time.Second}
	out := disruption.Decide(input([]*v1.NodePool{np}, nodes...), disruption.Options{
		Clock: clk, MultiNodeTimeout: 1500 * time.Millisecond, SingleNodeTimeout: 1500 * time.Millisecond,
	})
	if out.Command != nil {
		t.Fatalf("unexpected command %+v", summarize(out.Command))
	}
	for _, m := range []disruption.Method{disruption.MethodMultiNode, disruption.MethodSingleNode} {
		if !slices.Contains(out.TimedOut, m) {
			t.Errorf("%s did not time out; timed out: %v", m, out.TimedOut)
		}
		if out.Durations[m] <= 0 {
			t.Errorf("%s duration %v not measured on the clock", m, out.Durations[m])
		}
	}
}

// TestInterruptedSearchStops: an interrupted pass (the controller is
// shutting down) ends both consolidation searches at their first check,
// whatever the clock says, after a single simulation each.
func TestInterruptedSearchStops(t *testing.T) {
	np := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	var nodes []*machine.Machine
	for i := range 6 {
		nodes = append(nodes, makeNode(fmt.Sprintf("n%d", i), np, catalog()[2], zoneA, v1.CapacityTypeOnDemand).
			pods(pod(fmt.Sprintf("p%d", i), "web", "7")).obj())
	}
	checks := 0
	out := disruption.Decide(input([]*v1.NodePool{np}, nodes...), disruption.Options{
		Interrupted: func() bool { checks++; return true },
	})
	if out.Command != nil {
		t.Fatalf("unexpected command %+v", summarize(out.Command))
	}
	for _, m := range []disruption.Method{disruption.MethodMultiNode, disruption.MethodSingleNode} {
		if !slices.Contains(out.TimedOut, m) {
			t.Errorf("%s ran on after the interruption; stopped early: %v", m, out.TimedOut)
		}
	}
	if checks != 2 {
		t.Errorf("interruption checked %d times, want once per search", checks)
	}
}
