package simulator_test

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

func firstType(name string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		for i, c := range r.plan.NewNodeClaims {
			if c.InstanceTypes[0].Name != name {
				t.Errorf("claim %d cheapest option %s, want %s", i, c.InstanceTypes[0].Name, name)
			}
		}
	}
}

func cost(want float64) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		if got := r.plan.Cost(); math.Abs(got-want) > 1e-6 {
			t.Errorf("plan costs %.4f, want %.4f\n%s", got, want, dump(r.plan))
		}
	}
}

func smallCatalog(pods, ephemeral string) []*cloudprovider.InstanceType {
	w := dtesting.MakeInstanceType("tiny").CPU("4").Memory("8Gi").Pods(pods)
	if ephemeral != "" {
		w.Resource("ephemeral-storage", ephemeral)
	}
	return []*cloudprovider.InstanceType{w.Obj()}
}

func TestResources(t *testing.T) {
	amd64 := func(p *dtesting.PodWrapper) *dtesting.PodWrapper {
		return p.NodeSelector(corev1.LabelArchStable, "amd64")
	}
	runCases(t, map[string]tcase{
		"one pod gets the cheapest type that fits": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").Req("memory", "1Gi").Obj()}, claims: 1, check: firstType("c5.large"),
		},
		"options are every fitting type, cheapest first": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").Obj()}, claims: 1,
			check: func(t *testing.T, r *result) {
				if n := len(r.plan.NewNodeClaims[0].InstanceTypes); n != 10 {
					t.Errorf("got %d options, want all 10", n)
				}
			},
		},
		"max instance types truncates the options": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").Obj()}, claims: 1,
			opts: simulator.Options{MaxInstanceTypes: 3},
			check: func(t *testing.T, r *result) {
				if n := len(r.plan.NewNodeClaims[0].InstanceTypes); n != 3 {
					t.Errorf("got %d options, want 3", n)
				}
			},
		},
		"pods pack onto one claim of a larger type": {
			pods: dtesting.MakePod("p").Req("cpu", "1").Replicas(3), claims: 1, check: firstType("c5.xlarge"),
		},
		"kube-reserved is subtracted from capacity": {
			// 2 cpu fills a 2-cpu type's capacity but not its 1.9 allocatable.
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "2").Obj()}, claims: 1, check: firstType("c5.xlarge"),
		},
		"init container peak sizes the node": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").InitContainer("cpu", "3").Obj()}, claims: 1, check: firstType("c5.xlarge"),
		},
		"sidecar runs beside the containers": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1500m").Sidecar("cpu", "1").Obj()}, claims: 1, check: firstType("c5.xlarge"),
		},
		"pod overhead counts": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1800m").Overhead("cpu", "200m").Obj()}, claims: 1, check: firstType("c5.xlarge"),
		},
		"pod-level requests replace container requests": {
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := dtesting.MakePod("p").Req("cpu", "1").Obj()
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQ("3")}}
				return p
			}()},
			claims: 1, check: firstType("c5.xlarge"),
		},
		"extended resource picks the gpu type": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").Req(gpuResource, "1").Obj()}, claims: 1, check: firstType("p3.2xlarge"),
		},
		"two gpus fit no type": {
			pods:   []*corev1.Pod{dtesting.MakePod("p").Req(gpuResource, "2").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "short of nvidia.com/gpu"},
		},
		"resource no type offers": {
			pods:   []*corev1.Pod{dtesting.MakePod("p").Req("example.com/fpga", "1").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "example.com/fpga"},
		},
		"cpu larger than any type": {
			pods:   []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "64").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "nodepool default: no instance type has room for cpu 64"},
		},
		"memory-heavy pod takes the cheap arm64 type when allowed": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").Req("memory", "12Gi").Obj()}, claims: 1, check: firstType("m6g.xlarge"),
		},
		"memory-heavy amd64 pod takes the memory-optimised type": {
			pods: []*corev1.Pod{amd64(dtesting.MakePod("p").Req("cpu", "1").Req("memory", "12Gi")).Obj()}, claims: 1, check: firstType("m5.xlarge"),
		},
		"pod with no requests still takes a pod slot": {
			pods: []*corev1.Pod{dtesting.MakePod("p").Obj()}, claims: 1, check: firstType("c5.large"),
		},
		"pods capacity caps pods per node": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), smallCatalog("2", "")...)},
			pods:   dtesting.MakePod("p").Req("cpu", "10m").Replicas(5),
			claims: 3,
		},
		"ephemeral storage too large": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), smallCatalog("110", "20Gi")...)},
			pods:   []*corev1.Pod{dtesting.MakePod("p").Req("ephemeral-storage", "30Gi").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "short of ephemeral-storage"},
		},
		"ephemeral storage fits": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), smallCatalog("110", "20Gi")...)},
			pods:   dtesting.MakePod("p").Req("ephemeral-storage", "8Gi").Replicas(3),
			claims: 2,
		},
		"claim requests are the sum of its pods": {
			pods: dtesting.MakePod("p").Req("cpu", "500m").Req("memory", "1Gi").Replicas(3), claims: 1,
			check: func(t *testing.T, r *result) {
				req := r.plan.NewNodeClaims[0].Requests
				if cpu, mem, pods := req.Cpu().MilliValue(), req.Memory().Value(), req.Pods().Value(); cpu != 1500 || mem != 3<<30 || pods != 3 {
					t.Errorf("requests cpu %dm memory %d pods %d", cpu, mem, pods)
				}
			},
		},
		"cost-aware packing of large pods": {
			// Four 3-cpu pods: one 16-cpu node or two 8-cpu nodes cost the same.
			pods: dtesting.MakePod("p").Req("cpu", "3").Replicas(4), claims: -1, check: cost(2 * 2.5179869184),
		},
		"reference types pack a hundred pods onto one node": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), fakeTypes(400)...)},
			pods:   dtesting.MakePod("p").Req("cpu", "1").Req("memory", "2Gi").Replicas(100),
			claims: 1, check: firstType("fake-it-100"),
		},
		"negative request is invalid": {
			pods:   []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "-1").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "invalid resource requests"},
		},
	})
}
