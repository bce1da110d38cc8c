package simulator_test

import (
	"fmt"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// TestKarpenterMixFidelity replays the karpenter-mix plans in order: no pod's
// zonal spread or affinity fails when it binds, no claim free to launch in
// any zone holds a pod a zonal group counts, and at 20,000 pods no zone holds
// more than 1.2 times the pods of another for any spread selector.
func TestKarpenterMixFidelity(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1000, 5000, 20000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			pods := karpenterMixPods(n)
			snap := karpenterMixSnapshot(pods)
			plan := simulator.Simulate(snap, simulator.Options{})
			pr, err := replay.Materialize(fmt.Sprintf("karpenter-mix-%d", n), snap, simulator.Request{Pods: pods}, plan)
			if err != nil {
				t.Fatalf("materialising the plan: %v", err)
			}
			f := checkFidelity(pr, plan.Cost())
			t.Logf("%s", f)
			if !f.ok() {
				t.Errorf("plan fails the replay: %s", f)
			}
			if n >= 20000 && f.balance > 1.2 {
				t.Errorf("zone balance %.3f > 1.2", f.balance)
			}
		})
	}
}
