package disruption_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// The consolidation benchmark (docs/workloads.md section 4): an on-demand
// cluster of n nodes of mixed types (c, m and r families at 2, 4, 8 and 16
// cpu, three zones, EC2-like prices) at 30-60% cpu utilisation, running the
// replicas of 100 deployments: a third spread over zones (ScheduleAnyway),
// a tenth with hostname anti-affinity, memory of 1, 2 or 4 GiB per cpu.
// Every node's consolidateAfter has passed and budgets allow everything, so
// consolidation has the whole cluster to consider. One iteration is one
// complete decision: Decide runs emptiness, drift, multi-node and, when
// multi-node finds nothing, single-node consolidation, and returns the
// command. The $/h metrics give the cluster's price before, after that one
// command, and after applying commands until none is left ("converged").

func BenchmarkConsolidation100(b *testing.B)  { benchmarkConsolidation(b, 100) }
func BenchmarkConsolidation500(b *testing.B)  { benchmarkConsolidation(b, 500) }
func BenchmarkConsolidation1000(b *testing.B) { benchmarkConsolidation(b, 1000) }
func BenchmarkConsolidation2000(b *testing.B) { benchmarkConsolidation(b, 2000) }

// benchFamilies: cpu:memory ratio and on-demand $/cpu-hour.
var benchFamilies = []struct {
	name        string
	gibPerCPU   int
	pricePerCPU float64
}{{"c5", 2, 0.0425}, {"m5", 4, 0.048}, {"r5", 8, 0.063}}

var benchSizes = []struct {
	name string
	cpu  int
}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}, {"4xlarge", 16}}

func benchTypes() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, f := range benchFamilies {
		for _, s := range benchSizes {
			price := f.pricePerCPU * float64(s.cpu)
			w := dtesting.MakeInstanceType(f.name + "." + s.name).CPU(fmt.Sprint(s.cpu)).
				Memory(fmt.Sprintf("%dGi", f.gibPerCPU*s.cpu)).Pods("110")
			for _, z := range []string{"zone-1", "zone-2", "zone-3"} {
				w = w.Offering(z, v1.CapacityTypeOnDemand, price, true).Offering(z, v1.CapacityTypeSpot, 0.7*price, true)
			}
			out = append(out, w.Obj())
		}
	}
	return out
}

func benchInput(n int) disruption.Input {
	rng := rand.New(rand.NewPCG(42, 42))
	its := benchTypes()
	np := makePool("default").budgets(budget("100%")).
		req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	in := disruption.Input{Now: now, NodePools: []simulator.NodePool{{NodePool: np, InstanceTypes: its}}}
	for i := range n {
		it := its[rng.IntN(len(its))]
		name := fmt.Sprintf("node-%04d", i)
		w := makeNode(name, np, it, fmt.Sprintf("zone-%d", i%3+1), v1.CapacityTypeOnDemand)
		cpu := it.Capacity.Cpu().MilliValue()
		mem := it.Capacity.Memory().Value()
		cpuBudget := cpu * int64(30+rng.IntN(31)) / 100
		memBudget := mem * 6 / 10
		// Draw replicas until the cpu target is met; skip draws that do
		// not fit, so that every node runs something.
		for j, misses := 0, 0; misses < 20; j++ {
			d := rng.IntN(100)
			podCPU := []int64{100, 250, 500, 1000}[d%4]
			podMem := podCPU * int64(1<<(d%3)) << 20 // 1, 2 or 4 GiB per cpu
			if podCPU > cpuBudget || podMem > memBudget {
				misses++
				continue
			}
			cpuBudget -= podCPU
			memBudget -= podMem
			app := fmt.Sprintf("app-%02d", d)
			p := dtesting.MakePod(fmt.Sprintf("%s-%s-%d", app, name, j)).Label("app", app)
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(podCPU, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(podMem, resource.BinarySI),
			}
			switch {
			case d%10 == 0:
				p.PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": app})
			case d%3 == 0:
				p.ZoneSpread(1, map[string]string{"app": app}, dtesting.ScheduleAnyway())
			}
			pod := p.Obj()
			pod.UID = types.UID(pod.Name)
			w.pods(pod)
		}
		in.Nodes = append(in.Nodes, w.obj())
	}
	return in
}

func clusterPrice(in disruption.Input) float64 {
	total := 0.0
	for _, c := range disruption.Candidates(disruption.Input{Now: in.Now, Nodes: in.Nodes, NodePools: in.NodePools}, disruption.Options{}) {
		total += c.Price
	}
	return total
}

func benchmarkConsolidation(b *testing.B, n int) {
	in := benchInput(n)
	clk := clock.RealClock{}
	opts := disruption.Options{Clock: clk}
	single := disruption.Options{Clock: clk, Methods: []disruption.Method{disruption.MethodSingleNode}}
	before := clusterPrice(in)
	var out, singleOut disruption.Outcome
	var decision, singleNode time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := clk.Now()
		out = disruption.Decide(in, opts)
		decision += clk.Since(start)
		start = clk.Now()
		singleOut = disruption.Decide(in, single)
		singleNode += clk.Since(start)
	}
	if out.Command == nil || singleOut.Command == nil {
		b.Fatalf("no consolidation command on %d nodes", n)
	}
	b.ReportMetric(float64(decision.Milliseconds())/float64(b.N), "ms/decision")
	b.ReportMetric(float64(singleNode.Milliseconds())/float64(b.N), "ms/single-node")
	b.ReportMetric(before, "$/h-before")
	b.ReportMetric(before-out.Command.Savings(), "$/h-after")
	b.ReportMetric(float64(len(out.Command.Candidates)), "nodes-disrupted")
	b.StopTimer()
	converged, passes, last := converge(in, opts)
	b.ReportMetric(converged, "$/h-converged")
	b.ReportMetric(float64(passes), "passes")
	b.ReportMetric(float64(last.Milliseconds()), "ms/last-pass")
}

// converge applies commands (outside the timed loop) until Decide finds
// none, and returns the final price, the number of passes, and how long the
// last pass took: the worst case, where every method runs and finds nothing.
func converge(in disruption.Input, opts disruption.Options) (float64, int, time.Duration) {
	passes := 0
	var last time.Duration
	for ; passes < 1000; passes++ {
		start := opts.Clock.Now()
		out := disruption.Decide(in, opts)
		last = opts.Clock.Since(start)
		if out.Command == nil {
			break
		}
		in = apply(in, out.Command, passes)
	}
	return clusterPrice(in), passes, last
}

// apply carries a command out on the input, as the cluster would once the
// candidates are drained: their pods go where the plan put them, and each
// replacement becomes a node of its cheapest option.
func apply(in disruption.Input, cmd *disruption.Command, pass int) disruption.Input {
	gone := map[string]bool{}
	for _, c := range cmd.Candidates {
		gone[c.Name()] = true
	}
	moved := map[*corev1.Pod]string{}
	if cmd.Plan != nil {
		for _, p := range cmd.Plan.Placements {
			moved[p.Pod] = p.Node
		}
	}
	out := in
	out.Nodes = nil
	byName := map[string]*machine.Machine{}
	for _, n := range in.Nodes {
		if gone[n.Name()] {
			continue
		}
		cp := *n
		cp.Pods = append([]*corev1.Pod(nil), n.Pods...)
		byName[cp.Name()] = &cp
		out.Nodes = append(out.Nodes, &cp)
	}
	for pod, node := range moved {
		if dst, ok := byName[node]; ok {
			p := pod.DeepCopy()
			p.Spec.NodeName = node
			dst.Pods = append(dst.Pods, p)
		}
	}
	np := in.NodePools[0].NodePool
	for i, r := range cmd.Replacements {
		it := r.Claim.InstanceTypes[0]
		zone := "zone-1"
		if z, ok := r.Claim.Requirements.Get(corev1.LabelTopologyZone); ok && len(z.Values()) > 0 {
			zone = z.Values()[0]
		}
		w := makeNode(fmt.Sprintf("repl-%d-%d", pass, i), np, it, zone, v1.CapacityTypeOnDemand)
		for _, pod := range r.Claim.Pods {
			w.pods(pod.DeepCopy())
		}
		out.Nodes = append(out.Nodes, w.obj())
	}
	return out
}
