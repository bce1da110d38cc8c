package simulator_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// oracleSizesEnv lists the workload sizes whose plans are written for the
// oracle (comma-separated); unset means 1000 and 5000.
const oracleSizesEnv = "DOVETAIL_ORACLE_SIZES"

func oracleSizes() []int {
	v := os.Getenv(oracleSizesEnv)
	if v == "" {
		return []int{1000, 5000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestWorkloadFidelity replays the benchmark workloads' plans in order: no
// pod's zonal spread or affinity fails when it binds, no claim free to
// launch in any zone holds a pod a zonal group counts, the plan's cost is
// its claims' cheapest offerings, and for karpenter-mix at 20,000 pods no
// zone holds more than 1.2 times the pods of another for any spread
// selector. With DOVETAIL_ORACLE_DIR set it also writes the plans of the
// sizes in DOVETAIL_ORACLE_SIZES for the kube-scheduler oracle.
func TestWorkloadFidelity(t *testing.T) {
	t.Parallel()
	type workload struct {
		name string
		snap func(t *testing.T) (*simulator.Snapshot, simulator.Options)
		size int
	}
	var cases []workload
	sizes := []int{1000, 5000, 20000}
	for _, n := range oracleSizes() {
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		cases = append(cases, workload{"karpenter-mix", func(*testing.T) (*simulator.Snapshot, simulator.Options) {
			return karpenterMixSnapshot(karpenterMixPods(n)), simulator.Options{}
		}, n})
		if n <= 5000 || slices.Contains(oracleSizes(), n) {
			cases = append(cases, workload{"ec2-mix", func(t *testing.T) (*simulator.Snapshot, simulator.Options) {
				return &simulator.Snapshot{Pods: ec2MixPods(n), NodePools: ec2Pools(ec2Types(t))}, simulator.Options{}
			}, n})
		}
	}
	for _, policy := range []simulator.PreferencePolicy{simulator.PreferencesRespect, simulator.PreferencesIgnore} {
		cases = append(cases, workload{"preferences-" + strings.ToLower(string(policy)), func(*testing.T) (*simulator.Snapshot, simulator.Options) {
			return karpenterMixSnapshot(preferencePods(4000)), simulator.Options{PreferencePolicy: policy}
		}, 4000})
	}
	for _, w := range cases {
		name := fmt.Sprintf("%s-%d", w.name, w.size)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			snap, opts := w.snap(t)
			plan := simulator.Simulate(snap, opts)
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d pods unschedulable, first %s: %s", len(plan.Unschedulable), plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
			}
			pr, err := replay.Materialize(name, snap, simulator.Request{Pods: snap.Pods}, plan)
			if err != nil {
				t.Fatalf("materialising the plan: %v", err)
			}
			f := checkFidelity(pr, plan.Cost())
			t.Logf("%s", f)
			if !f.ok() {
				t.Errorf("plan fails the replay: %s", f)
			}
			if w.name == "karpenter-mix" && w.size >= 20000 && f.balance > 1.2 {
				t.Errorf("zone balance %.3f > 1.2", f.balance)
			}
			if slices.Contains(oracleSizes(), w.size) || w.size == 4000 {
				dumpProblem(t, pr)
			}
		})
	}
}
