package simulator_test

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// mixGenerator draws the pod sizes and labels of the reference benchmark from
// a generator seeded with 42.
type mixGenerator struct {
	rng *rand.Rand
	n   int
}

func newMixGenerator() *mixGenerator { return &mixGenerator{rng: rand.New(rand.NewPCG(42, 42))} }

func (g *mixGenerator) value() string {
	return []string{"a", "b", "c", "d", "e", "f", "g"}[g.rng.IntN(7)]
}

func (g *mixGenerator) pod(labels map[string]string) *dtesting.PodWrapper {
	g.n++
	p := dtesting.MakePod(fmt.Sprintf("pod-%05d", g.n))
	for k, v := range labels {
		p.Label(k, v)
	}
	return p
}

func (g *mixGenerator) sized(p *dtesting.PodWrapper) *corev1.Pod {
	cpu := []int64{100, 250, 500, 1000, 1500}[g.rng.IntN(5)]
	mem := []int64{100, 256, 512, 1024, 2048, 4096}[g.rng.IntN(6)]
	pod := p.Obj()
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI),
	}
	pod.UID = types.UID(pod.Name)
	return pod
}

// karpenterMixPods returns the five-part pod mix of docs/workloads.md: generic
// pods, zonal spread, hostname spread, zonal self-affinity and hostname
// self-anti-affinity, n/5 each with the remainder in the first part.
func karpenterMixPods(n int) []*corev1.Pod {
	g := newMixGenerator()
	part := n / 5
	var pods []*corev1.Pod
	for range part + n%5 {
		pods = append(pods, g.sized(g.pod(map[string]string{"my-label": g.value()})))
	}
	for _, key := range []string{corev1.LabelTopologyZone, corev1.LabelHostname} {
		for range part {
			p := g.pod(map[string]string{"my-label": g.value()})
			p.Spread(key, 1, map[string]string{"my-label": g.value()})
			pods = append(pods, g.sized(p))
		}
	}
	for range part {
		labels := map[string]string{"my-affinity": g.value()}
		p := g.pod(labels).PodAffinity(corev1.LabelTopologyZone, labels)
		pods = append(pods, g.sized(p))
	}
	for range part {
		labels := map[string]string{"app": "nginx"}
		p := g.pod(labels).PodAntiAffinity(corev1.LabelHostname, labels)
		pods = append(pods, g.sized(p))
	}
	return pods
}

// preferencePods returns the preference workload: pods that prefer zone-1,
// prefer other zones than their peers (weight 10) and other hosts (weight 1).
// As in Karpenter's benchmark, one size is drawn (from the generator seeded
// with 42) for all of them.
func preferencePods(n int) []*corev1.Pod {
	g := newMixGenerator()
	var pods []*corev1.Pod
	app := map[string]string{"app": "nginx"}
	var size corev1.ResourceList
	for range n {
		p := g.pod(app).
			PreferredNodeAffinity(1, corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.Zone1).
			PreferredPodAntiAffinity(10, corev1.LabelTopologyZone, app).
			PreferredPodAntiAffinity(1, corev1.LabelHostname, app)
		if size == nil {
			pod := g.sized(p)
			size = pod.Spec.Containers[0].Resources.Requests
			pods = append(pods, pod)
			continue
		}
		pod := p.Obj()
		pod.Spec.Containers[0].Resources.Requests = size.DeepCopy()
		pod.UID = types.UID(pod.Name)
		pods = append(pods, pod)
	}
	return pods
}

// karpenterMixSnapshot is one NodePool with limits that never bind over the
// 400 reference instance types, and the given pods.
func karpenterMixSnapshot(pods []*corev1.Pod) *simulator.Snapshot {
	pool := dtesting.MakeNodePool("default").Limit("cpu", "10000000").Limit("memory", "10000000Gi").Obj()
	return &simulator.Snapshot{
		Pods:      pods,
		NodePools: []simulator.NodePool{{NodePool: pool, InstanceTypes: fake.InstanceTypes(400)}},
	}
}
