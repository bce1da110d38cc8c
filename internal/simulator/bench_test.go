package simulator_test

import (
	corev1 "k8s.io/api/core/v1"

	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// To run: go test ./internal/simulator -run '^$' -bench . -benchmem
//
// Each iteration is one fresh simulation (indexing the snapshot and solving);
// building the snapshot's objects happens before the timer starts.

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
}
