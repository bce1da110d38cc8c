package simulator_test

import (
	corev1 "k8s.io/api/core/v1"

	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// To run: go test ./internal/simulator -run '^$' -bench . -benchmem
//
// Each iteration is one fresh simulation, timed whole: simulator.Simulate,
// which indexes the snapshot into a model (New) and solves it (Solve).
// Building the snapshot's objects happens before the timer starts. After
// the timed loop the last plan is replayed in order (checkFidelity) and
// its cost and verdict are reported next to pods/s: $/h, nodes and
// replay-violations (pods whose zonal spread or affinity fails when they
// bind, plus pods on zone-less claims a zonal group counts; 0 is the only
// acceptable value). The kube-scheduler oracle's verdict on the same plans
// comes from `make bench` (test/oracle), see docs/benchmarks.md.

func BenchmarkKarpenterMix1(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(1), simulator.Options{})
}
func BenchmarkKarpenterMix100(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(100), simulator.Options{})
}
func BenchmarkKarpenterMix1000(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(1000), simulator.Options{})
}
func BenchmarkKarpenterMix2000(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(2000), simulator.Options{})
}
func BenchmarkKarpenterMix5000(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(5000), simulator.Options{})
}
func BenchmarkKarpenterMix10000(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(10000), simulator.Options{})
}
func BenchmarkKarpenterMix20000(b *testing.B) {
	benchmarkSolve(b, karpenterMixPods(20000), simulator.Options{})
}

func BenchmarkPreferencesRespect(b *testing.B) {
	benchmarkSolve(b, preferencePods(4000), simulator.Options{PreferencePolicy: simulator.PreferencesRespect})
}

func BenchmarkPreferencesIgnore(b *testing.B) {
	benchmarkSolve(b, preferencePods(4000), simulator.Options{PreferencePolicy: simulator.PreferencesIgnore})
}

func benchmarkSolve(b *testing.B, pods []*corev1.Pod, opts simulator.Options) {
	snap := karpenterMixSnapshot(pods)
	b.ReportAllocs()
	var plan *simulator.Plan
	for b.Loop() {
		plan = simulator.Simulate(snap, opts)
	}
	if len(plan.Unschedulable) > 0 {
		b.Fatalf("%d pods unschedulable, first: %s: %s", len(plan.Unschedulable), plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
	}
	b.ReportMetric(float64(len(pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(len(plan.NewNodeClaims)), "nodes")
	b.ReportMetric(plan.Cost(), "$/h")
	b.StopTimer()
	b.ReportMetric(float64(replayViolations(b, snap, plan)), "replay-violations")
}

// replayViolations replays a benchmark's plan in order (checkFidelity) and
// counts the pods that fail it.
func replayViolations(b *testing.B, snap *simulator.Snapshot, plan *simulator.Plan) int {
	b.Helper()
	pr, err := replay.Materialize(b.Name(), snap, simulator.Request{Pods: snap.Pods}, plan)
	if err != nil {
		b.Fatalf("materialising the plan: %v", err)
	}
	f := checkFidelity(pr, plan.Cost())
	if f.costMismatch != "" {
		b.Errorf("%s", f.costMismatch)
	}
	return f.spreadViolation + f.affinityBroken + f.zonelessPods
}
