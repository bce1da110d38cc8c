package simulator_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// A consolidation-shaped workload: a cluster of n existing nodes of mixed
// sizes (2 to 16 cpu, three zones) at 30-60% utilisation, running the
// replicas of 100 deployments, a third of them spread over zones and a tenth
// with hostname anti-affinity. The model is built once; each iteration asks
// one what-if question: without these nodes, do their pods fit on the rest
// plus at most one new, strictly cheaper node?

type cluster struct {
	snap   *simulator.Snapshot
	prices map[string]float64 // node -> hourly price
}

func whatIfCluster(n int) *cluster {
	rng := rand.New(rand.NewPCG(7, 7))
	shapes := []struct {
		name string
		cpu  int
	}{{"m5.large", 2}, {"m5.xlarge", 4}, {"m5.2xlarge", 8}, {"m5.4xlarge", 16}}
	zones := []string{"zone-1", "zone-2", "zone-3"}
	var its []*cloudprovider.InstanceType
	for _, s := range shapes {
		its = append(its, dtesting.MakeInstanceType(s.name).CPU(fmt.Sprint(s.cpu)).Memory(fmt.Sprintf("%dGi", 4*s.cpu)).Pods("110").Obj())
	}
	c := &cluster{prices: map[string]float64{}}
	snap := &simulator.Snapshot{NodePools: []simulator.NodePool{{NodePool: dtesting.MakeNodePool("default").Obj(), InstanceTypes: its}}}
	for i := range n {
		s := shapes[rng.IntN(len(shapes))]
		name := fmt.Sprintf("node-%04d", i)
		node := dtesting.MakeNode(name).NodePool("default").Zone(zones[i%3]).
			Label(corev1.LabelInstanceTypeStable, s.name).Label(ctKey, "on-demand").
			Alloc("cpu", fmt.Sprintf("%dm", s.cpu*1000-100), "memory", fmt.Sprintf("%dMi", s.cpu*4096-10), "pods", "110").
			Capacity("cpu", fmt.Sprint(s.cpu), "memory", fmt.Sprintf("%dGi", 4*s.cpu), "pods", "110")
		// Fill to 30-60% of cpu with deployment replicas.
		budget := int64(s.cpu*1000) * int64(30+rng.IntN(31)) / 100
		for j := 0; budget > 0; j++ {
			d := rng.IntN(100)
			cpu := []int64{100, 250, 500, 1000}[d%4]
			if cpu > budget {
				break
			}
			budget -= cpu
			app := fmt.Sprintf("app-%02d", d)
			p := dtesting.MakePod(fmt.Sprintf("%s-%s-%d", app, name, j)).Label("app", app)
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(cpu*2<<20, resource.BinarySI),
			}
			switch {
			case d%10 == 0:
				p.PodAntiAffinity(corev1.LabelHostname, sel("app", app))
			case d%3 == 0:
				p.ZoneSpread(1, sel("app", app), dtesting.ScheduleAnyway())
			}
			pod := p.Obj()
			pod.UID = types.UID(pod.Name)
			node.Pod(pod)
		}
		snap.Nodes = append(snap.Nodes, node.Obj())
		c.prices[name] = 0.1*float64(s.cpu) + 0.1*float64(int64(4*s.cpu)<<30)/1e9
	}
	c.snap = snap
	return c
}

func BenchmarkWhatIfModel1000(b *testing.B) {
	c := whatIfCluster(1000)
	b.ReportAllocs()
	for b.Loop() {
		simulator.New(c.snap, simulator.Options{})
	}
}

func BenchmarkWhatIfSingleNode1000(b *testing.B) { benchmarkWhatIf(b, 1000, 1) }
func BenchmarkWhatIfTenNodes1000(b *testing.B)   { benchmarkWhatIf(b, 1000, 10) }

func benchmarkWhatIf(b *testing.B, n, remove int) {
	c := whatIfCluster(n)
	m := simulator.New(c.snap, simulator.Options{})
	one := 1
	var requests []simulator.Request
	for i := 0; i+remove <= n; i += remove {
		r := simulator.Request{MaxNewNodeClaims: &one}
		for _, node := range c.snap.Nodes[i : i+remove] {
			r.RemoveNodes = append(r.RemoveNodes, node.Name)
			r.Pods = append(r.Pods, node.Pods...)
			r.MaxNewNodeClaimPrice += c.prices[node.Name]
		}
		requests = append(requests, r)
	}
	b.ReportAllocs()
	fits, i := 0, 0
	for b.Loop() {
		plan := m.Solve(requests[i%len(requests)])
		if len(plan.Unschedulable) == 0 {
			fits++
		}
		i++
	}
	b.ReportMetric(float64(fits)/float64(i), "fit-ratio")
}
