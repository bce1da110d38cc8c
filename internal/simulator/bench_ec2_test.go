package simulator_test

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// The ec2-mix workload of docs/workloads.md on the embedded catalog (us-east-1,
// spot in three zones at the catalog's deterministic discount):
//
//   - a "general" NodePool over the c, m and r families (amd64, linux);
//   - a "gpu" NodePool over the g and p families, tainted nvidia.com/gpu;
//   - n pods: 40% web (250m/512Mi, zonal spread), 25% api (1/2Gi; a quarter
//     of them with hostname anti-affinity), 20% batch (2/8Gi), 14%
//     memory-heavy (1/16Gi) and 1% GPU (1/4Gi, nvidia.com/gpu: 1).
//
// The cost ratio compares what the plan spends on the general pool with the
// fractional lower bound for the same pods: the cheapest spend if cpu and
// memory could be bought in fractions of the general pool's types, each at its
// cheapest offering (a two-constraint linear program, solved exactly).

func BenchmarkEC2Mix1000(b *testing.B)  { benchmarkEC2(b, ec2MixPods(1000)) }
func BenchmarkEC2Mix5000(b *testing.B)  { benchmarkEC2(b, ec2MixPods(5000)) }
func BenchmarkEC2Mix20000(b *testing.B) { benchmarkEC2(b, ec2MixPods(20000)) }

// The generic parts of ec2-mix on their own: the same pods without the zonal
// spread, the hostname anti-affinity and the GPU pods, so that the cost
// ratio measures packing alone.
func BenchmarkEC2Generic1000(b *testing.B)  { benchmarkEC2(b, genericPods(ec2MixPods(1000))) }
func BenchmarkEC2Generic5000(b *testing.B)  { benchmarkEC2(b, genericPods(ec2MixPods(5000))) }
func BenchmarkEC2Generic20000(b *testing.B) { benchmarkEC2(b, genericPods(ec2MixPods(20000))) }

func genericPods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if _, gpu := p.Spec.Containers[0].Resources.Requests[gpuResource]; gpu {
			continue
		}
		p.Spec.TopologySpreadConstraints = nil
		p.Spec.Affinity = nil
		out = append(out, p)
	}
	return out
}

func ec2Types(tb testing.TB) []*cloudprovider.InstanceType {
	tb.Helper()
	types, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return ec2types.FromCatalog(types)
}

func ec2Pools(types []*cloudprovider.InstanceType) []simulator.NodePool {
	general := dtesting.MakeNodePool("general").
		Req(catalog.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r").
		Req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").
		Req(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux").Obj()
	gpu := dtesting.MakeNodePool("gpu").
		Req(catalog.LabelInstanceCategory, corev1.NodeSelectorOpIn, "g", "p").
		Taint(gpuResource, "true", corev1.TaintEffectNoSchedule).Obj()
	return []simulator.NodePool{{NodePool: general, InstanceTypes: types}, {NodePool: gpu, InstanceTypes: types}}
}

func ec2MixPods(n int) []*corev1.Pod {
	var pods []*corev1.Pod
	add := func(prefix string, count int, build func(i int) *dtesting.PodWrapper) {
		for i := range count {
			p := build(i).Obj()
			p.Name = fmt.Sprintf("%s-%05d", prefix, i)
			p.UID = types.UID("uid-" + p.Name)
			pods = append(pods, p)
		}
	}
	web, api, batch, mem := n*40/100, n*25/100, n*20/100, n*14/100
	gpu := n - web - api - batch - mem
	add("web", web, func(int) *dtesting.PodWrapper {
		return dtesting.MakePod("").Label("app", "web").Req("cpu", "250m").Req("memory", "512Mi").ZoneSpread(1, sel("app", "web"))
	})
	add("api", api, func(i int) *dtesting.PodWrapper {
		p := dtesting.MakePod("").Label("app", "api").Req("cpu", "1").Req("memory", "2Gi")
		if i%4 == 0 {
			p.Label("tier", "ha").PodAntiAffinity(corev1.LabelHostname, sel("tier", "ha"))
		}
		return p
	})
	add("batch", batch, func(int) *dtesting.PodWrapper {
		return dtesting.MakePod("").Label("app", "batch").Req("cpu", "2").Req("memory", "8Gi")
	})
	add("mem", mem, func(int) *dtesting.PodWrapper {
		return dtesting.MakePod("").Label("app", "cache").Req("cpu", "1").Req("memory", "16Gi")
	})
	add("gpu", gpu, func(int) *dtesting.PodWrapper {
		return dtesting.MakePod("").Label("app", "train").Req("cpu", "1").Req("memory", "4Gi").Req(gpuResource, "1").
			Toleration(gpuResource, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)
	})
	return pods
}

func benchmarkEC2(b *testing.B, pods []*corev1.Pod) {
	its := ec2Types(b)
	snap := &simulator.Snapshot{Pods: pods, NodePools: ec2Pools(its)}
	b.ReportAllocs()
	var plan *simulator.Plan
	for b.Loop() {
		plan = simulator.Simulate(snap, simulator.Options{})
	}
	if len(plan.Unschedulable) > 0 {
		b.Fatalf("%d pods unschedulable, first: %s: %s", len(plan.Unschedulable), plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
	}
	general := 0.0
	var cpu, mem float64
	for _, c := range plan.NewNodeClaims {
		if c.NodePool != "general" {
			continue
		}
		general += c.Price
		for _, p := range c.Pods {
			r := podRequests(p)
			cpu += r.Cpu().AsApproximateFloat64()
			mem += r.Memory().AsApproximateFloat64()
		}
	}
	bound := fractionalBound(generalTypes(snap.NodePools[0]), cpu, mem)
	b.ReportMetric(float64(len(pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(len(plan.NewNodeClaims)), "nodes")
	b.ReportMetric(plan.Cost(), "$/h")
	b.ReportMetric(general/bound, "cost-ratio")
	b.ReportMetric(float64(replayViolations(b, snap, plan)), "replay-violations")
}

// generalTypes returns the types a NodePool's requirements allow.
func generalTypes(np simulator.NodePool) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	reqs := np.NodePool.Spec.Template.Spec.Requirements
	for _, it := range np.InstanceTypes {
		ok := true
		for _, r := range reqs {
			req, has := it.Requirements.Get(r.Key)
			if !has {
				ok = false
				break
			}
			match := false
			for _, v := range r.Values {
				if req.Has(v) {
					match = true
				}
			}
			if !match {
				ok = false
				break
			}
		}
		if ok && it.HasAvailableOffering() {
			out = append(out, it)
		}
	}
	return out
}

// fractionalBound is the least cost of buying cpu cores and mem bytes of
// allocatable capacity in fractions of the given types at their cheapest
// offering: min Σ price·x subject to Σ cpu·x ≥ cpu, Σ mem·x ≥ mem, x ≥ 0.
// An optimum uses at most two types, so singles and pairs are enumerated.
func fractionalBound(types []*cloudprovider.InstanceType, cpu, mem float64) float64 {
	type shape struct{ c, m, p float64 }
	var shapes []shape
	for _, it := range types {
		o, _ := it.CheapestOffering(nil)
		alloc := it.Allocatable()
		shapes = append(shapes, shape{alloc.Cpu().AsApproximateFloat64(), alloc.Memory().AsApproximateFloat64(), o.Price})
	}
	best := math.Inf(1)
	for _, s := range shapes {
		if s.c > 0 && s.m > 0 {
			best = min(best, s.p*max(cpu/s.c, mem/s.m))
		}
	}
	for i, a := range shapes {
		for _, b := range shapes[i+1:] {
			det := a.c*b.m - b.c*a.m
			if det == 0 {
				continue
			}
			xa := (cpu*b.m - b.c*mem) / det
			xb := (a.c*mem - cpu*a.m) / det
			if xa >= 0 && xb >= 0 {
				best = min(best, a.p*xa+b.p*xb)
			}
		}
	}
	return best
}
