package disruption_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// The consolidation convergence benchmark (issue 16, item 4): the cluster of
// the consolidation benchmark (benchInput) after every deployment is scaled
// down to a third of its replicas, consolidated to a fixed point: Decide,
// apply its command to the model (apply, in bench_test.go), again, until
// Decide returns no command. One iteration is the whole run. Reported:
//
//   - cost-ratio: the converged cluster's $/h divided by the $/h of a fresh
//     plan for the remaining pods (the simulator on an empty cluster with
//     the same NodePool and instance types). Target: at most 1.05.
//   - eviction-ratio: pods evicted (the pods of every disrupted node, summed
//     over the commands) divided by the pods that were, after the
//     scale-down, on a node absent from the converged cluster. Those pods
//     must each be evicted at least once by any sequence of commands that
//     ends with that set of nodes (surviving nodes keep their pods), so the
//     divisor is the fewest evictions reaching that end state, and the
//     excess counts the pods moved more than once (moved onto a node that a
//     later command disrupted). 1 when nothing was evicted. Target: at most
//     1.3.
//   - commands: the commands applied; ms-deciding: the time spent in
//     Decide over all of them and the last, empty, pass.
//
// Variants: "budget=100%" (nothing throttles, Karpenter's multi-node cap of
// 100 candidates), "budget=100%,cap=all" (the cap lifted to every node) and
// "budget=10%" (the NodePool's default budget: a command disrupts at most a
// tenth of the pool; the model deletes a command's nodes at once, so budgets
// only bound each command's size). 2,000 nodes is skipped under -short.
//
//	go test -run '^$' -bench ConsolidationConvergence -benchtime 1x -timeout 30m ./internal/disruption/
func BenchmarkConsolidationConvergence(b *testing.B) {
	for _, n := range []int{100, 500, 1000, 2000} {
		for _, v := range []struct {
			name   string
			budget string
			cap    bool
			multi  bool
		}{
			{"budget=100%", "100%", false, false}, {"budget=100%,cap=all", "100%", true, false}, {"budget=10%", "10%", false, false},
			{"budget=100%,replacements=many", "100%", false, true}, {"budget=10%,replacements=many", "10%", false, true},
		} {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, v.name), func(b *testing.B) {
				if n >= 2000 && testing.Short() {
					b.Skip("2,000 nodes is skipped under -short")
				}
				in := scaledDown(benchInput(n), 3)
				in.NodePools[0].NodePool.Spec.Disruption.Budgets = []v1.Budget{budget(v.budget)}
				opts := disruption.Options{Clock: clock.RealClock{}, MultiNodeReplacements: v.multi}
				if v.cap {
					opts.MaxMultiNodeCandidates = n
				}
				var r convergence
				for b.Loop() {
					r = convergeCounting(b, in, opts)
				}
				fresh, freshNodes, freshCPU := freshPlan(b, in)
				b.ReportMetric(float64(len(in.Nodes)), "nodes-before")
				b.ReportMetric(float64(r.nodes), "nodes-converged")
				b.ReportMetric(float64(countPods(in)), "pods")
				b.ReportMetric(clusterCost(in), "$/h-before")
				b.ReportMetric(r.cost, "$/h-converged")
				b.ReportMetric(fresh, "$/h-fresh")
				b.ReportMetric(float64(freshNodes), "nodes-fresh")
				b.ReportMetric(r.cpuUtil, "cpu-util-converged")
				b.ReportMetric(podCPU(in)/freshCPU, "cpu-util-fresh")
				b.ReportMetric(r.cost/fresh, "cost-ratio")
				b.ReportMetric(float64(r.evictions), "evictions")
				b.ReportMetric(float64(r.fewest), "fewest-evictions")
				ratio := 1.0
				if r.fewest > 0 {
					ratio = float64(r.evictions) / float64(r.fewest)
				}
				b.ReportMetric(ratio, "eviction-ratio")
				b.ReportMetric(float64(r.commands), "commands")
				b.ReportMetric(float64(r.deciding.Microseconds())/1000, "ms-deciding")
				b.ReportMetric(float64(r.maxDisrupted), "max-disrupted")
			})
		}
	}
}

// scaledDown keeps every keep-th replica of each deployment (app label), in
// the order the fixture created them, as a scale-down does; nodes left
// without pods stay, for emptiness to remove.
func scaledDown(in disruption.Input, keep int) disruption.Input {
	seen := map[string]int{}
	out := in
	out.Nodes = nil
	for _, n := range in.Nodes {
		cp := *n
		cp.Pods = nil
		for _, p := range n.Pods {
			app := p.Labels["app"]
			if seen[app]%keep == 0 {
				cp.Pods = append(cp.Pods, p)
			}
			seen[app]++
		}
		out.Nodes = append(out.Nodes, &cp)
	}
	return out
}

type convergence struct {
	cost              float64
	nodes, commands   int
	evictions, fewest int
	maxDisrupted      int
	deciding          time.Duration
	cpuUtil           float64
}

// convergeCounting applies Decide's commands until it returns none, and
// counts the evictions, the fewest evictions reaching the same end state,
// and the time in Decide.
func convergeCounting(b testing.TB, in disruption.Input, opts disruption.Options) convergence {
	b.Helper()
	home := map[types.UID]string{}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			home[p.UID] = n.Name()
		}
	}
	var r convergence
	for pass := 0; ; pass++ {
		if pass == 10000 {
			b.Fatalf("no fixed point after %d commands", pass)
		}
		start := opts.Clock.Now()
		out := disruption.Decide(in, opts)
		r.deciding += opts.Clock.Since(start)
		if out.Command == nil {
			break
		}
		r.commands++
		r.maxDisrupted = max(r.maxDisrupted, len(out.Command.Candidates))
		for _, c := range out.Command.Candidates {
			r.evictions += len(c.Pods)
		}
		in = apply(in, out.Command, pass)
	}
	final := map[string]bool{}
	for _, n := range in.Nodes {
		final[n.Name()] = true
	}
	for _, node := range home {
		if !final[node] {
			r.fewest++
		}
	}
	if got := countPods(in); got != len(home) {
		b.Fatalf("%d pods before consolidating, %d after", len(home), got)
	}
	r.cost, r.nodes = clusterCost(in), len(in.Nodes)
	allocatable := 0.0
	for _, n := range in.Nodes {
		allocatable += float64(n.Node.Status.Allocatable.Cpu().MilliValue())
	}
	r.cpuUtil = podCPU(in) / allocatable
	return r
}

// podCPU is the cpu (millicores) the pods request.
func podCPU(in disruption.Input) float64 {
	total := 0.0
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			total += float64(p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue())
		}
	}
	return total
}

func countPods(in disruption.Input) int {
	total := 0
	for _, n := range in.Nodes {
		total += len(n.Pods)
	}
	return total
}

// clusterCost sums every node's on-demand price in its zone.
func clusterCost(in disruption.Input) float64 {
	total := 0.0
	for _, n := range in.Nodes {
		total += nodePrice(in, n)
	}
	return total
}

func nodePrice(in disruption.Input, n *machine.Machine) float64 {
	name := n.Node.Labels[corev1.LabelInstanceTypeStable]
	zone := n.Node.Labels[corev1.LabelTopologyZone]
	for _, it := range in.NodePools[0].InstanceTypes {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == v1.CapacityTypeOnDemand {
				return o.Price
			}
		}
	}
	panic("no price for node " + n.Name())
}

// freshPlan is the $/h, the number of nodes and the allocatable cpu
// (millicores, of each claim's cheapest type) of the simulator's plan for the
// cluster's pods, pending, on an empty cluster with the same NodePools.
func freshPlan(b testing.TB, in disruption.Input) (cost float64, nodes int, cpu float64) {
	b.Helper()
	var pods []*corev1.Pod
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			cp := p.DeepCopy()
			cp.Spec.NodeName = ""
			cp.Status = corev1.PodStatus{Phase: corev1.PodPending}
			pods = append(pods, cp)
		}
	}
	plan := simulator.Simulate(&simulator.Snapshot{Pods: pods, NodePools: in.NodePools}, simulator.Options{})
	if len(plan.Unschedulable) > 0 {
		b.Fatalf("fresh plan: %d pods unschedulable", len(plan.Unschedulable))
	}
	for _, c := range plan.NewNodeClaims {
		alloc := c.InstanceTypes[0].Allocatable()
		cpu += float64(alloc.Cpu().MilliValue())
	}
	return plan.Cost(), len(plan.NewNodeClaims), cpu
}

// BenchmarkConsolidationUncapped is one complete decision of the
// consolidation benchmark (benchmarkConsolidation, without the scale-down)
// with the multi-node cap lifted from Karpenter's 100 candidates to every
// node, to compare with BenchmarkConsolidation's 100 nodes-disrupted.
func BenchmarkConsolidationUncapped(b *testing.B) {
	for _, n := range []int{100, 500, 1000, 2000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			in := benchInput(n)
			opts := disruption.Options{Clock: clock.RealClock{}, MaxMultiNodeCandidates: n}
			var out disruption.Outcome
			for b.Loop() {
				out = disruption.Decide(in, opts)
			}
			if out.Command == nil {
				b.Fatalf("no consolidation command on %d nodes", n)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/decision")
			b.ReportMetric(clusterCost(in), "$/h-before")
			b.ReportMetric(clusterCost(in)-out.Command.Savings(), "$/h-after")
			b.ReportMetric(float64(len(out.Command.Candidates)), "nodes-disrupted")
		})
	}
}
