package simulator_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/daemonset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// poolsOf asserts which NodePool each pod's claim comes from.
func poolsOf(want map[string]string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		for pod, np := range want {
			c := r.claimOf(pod)
			if c == nil || c.NodePool != np {
				got := "none"
				if c != nil {
					got = c.NodePool
				}
				t.Errorf("pod %s on nodepool %s, want %s", pod, got, np)
			}
		}
	}
}

func claimCPU(i int, want string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		got := r.plan.NewNodeClaims[i].Requests[corev1.ResourceCPU]
		if got.Cmp(mustQ(want)) != 0 {
			t.Errorf("claim %d requests cpu %s, want %s", i, got.String(), want)
		}
	}
}

func TestDaemonSets(t *testing.T) {
	pod := func(name, cpu string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", cpu) }
	agent := dtesting.MakeDaemonSet("agent", dtesting.MakePod("x").Req("cpu", "500m"))
	armOnly := dtesting.MakeDaemonSet("arm-agent", dtesting.MakePod("x").Req("cpu", "1").NodeSelector(corev1.LabelArchStable, "arm64"))
	armAffinity := dtesting.MakeDaemonSet("arm-affinity", dtesting.MakePod("x").Req("cpu", "1").NodeAffinity(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
	amdPort8000 := dtesting.MakeDaemonSet("amd-8000", dtesting.MakePod("x").Req("cpu", "100m").HostPort(8000).NodeAffinity(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	armPort9000 := dtesting.MakeDaemonSet("arm-9000", dtesting.MakePod("x").Req("cpu", "100m").HostPort(9000).NodeAffinity(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
	noRequests := dtesting.MakeDaemonSet("no-requests", dtesting.MakePod("x"))
	tolerant := dtesting.MakeDaemonSet("tolerant", dtesting.MakePod("x").Req("cpu", "500m").Toleration("", corev1.TolerationOpExists, "", ""))
	tainted := dtesting.MakeNodePool("gpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	tolerate := func(p *dtesting.PodWrapper) *dtesting.PodWrapper {
		return p.Toleration("dedicated", corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)
	}
	runCases(t, map[string]tcase{
		"daemonset overhead sizes new nodes": {
			daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			pods:       []*corev1.Pod{pod("p", "1500m").Obj()}, claims: 1,
			check: checks(firstType("c5.xlarge"), claimCPU(0, "2")),
		},
		"daemonset that does not tolerate the pool's taint adds nothing": {
			pools: []simulator.NodePool{nodepool(tainted)}, daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			pods: []*corev1.Pod{tolerate(pod("p", "1500m")).Obj()}, claims: 1,
			check: checks(firstType("c5.large"), claimCPU(0, "1500m")),
		},
		"daemonset that tolerates every taint lands everywhere": {
			pools: []simulator.NodePool{nodepool(tainted)}, daemonsets: []*appsv1.DaemonSet{tolerant.Obj()},
			pods: []*corev1.Pod{tolerate(pod("p", "1500m")).Obj()}, claims: 1, check: firstType("c5.xlarge"),
		},
		"daemonset tolerating only some nodepools": {
			pools:      []simulator.NodePool{nodepool(dtesting.MakeNodePool("general")), nodepool(tainted)},
			daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			pods: []*corev1.Pod{
				pod("plain", "1500m").NodeSelector(corev1.LabelArchStable, "amd64").Obj(),
				tolerate(pod("dedicated", "1500m")).NodeSelector(v1.NodePoolLabelKey, "gpu").Obj(),
			},
			claims: 2,
			check: func(t *testing.T, r *result) {
				if got := r.claimOf("plain").InstanceTypes[0].Name; got != "c5.xlarge" {
					t.Errorf("plain on %s, want c5.xlarge (daemonset included)", got)
				}
				if got := r.claimOf("dedicated").InstanceTypes[0].Name; got != "c5.large" {
					t.Errorf("dedicated on %s, want c5.large (no daemonset)", got)
				}
			},
		},
		"daemonset selecting arm64 leaves amd64 nodes alone": {
			daemonsets: []*appsv1.DaemonSet{armOnly.Obj()},
			pods:       []*corev1.Pod{pod("p", "1500m").Obj()}, claims: 1, check: checks(firstType("c5.large"), claimCPU(0, "1500m")),
		},
		"daemonset selecting arm64 counts on arm64 nodes": {
			daemonsets: []*appsv1.DaemonSet{armOnly.Obj()},
			pods:       []*corev1.Pod{pod("p", "3").NodeSelector(corev1.LabelArchStable, "arm64").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "no instance type has room"},
		},
		"daemonset pinned to arm64 by node affinity leaves amd64 nodes alone": {
			daemonsets: []*appsv1.DaemonSet{armAffinity.Obj()},
			pods:       []*corev1.Pod{pod("p", "1500m").Obj()}, claims: 1, check: checks(firstType("c5.large"), claimCPU(0, "1500m")),
		},
		"daemonset pinned to arm64 by node affinity counts on arm64 nodes": {
			daemonsets: []*appsv1.DaemonSet{armAffinity.Obj()},
			pods:       []*corev1.Pod{pod("p", "1").NodeSelector(corev1.LabelArchStable, "arm64").Obj()}, claims: 1,
			check: checks(firstType("m6g.xlarge"), claimCPU(0, "2")),
		},
		"host ports of arch-pinned daemonsets count only on their arch": {
			daemonsets: []*appsv1.DaemonSet{amdPort8000.Obj(), armPort9000.Obj()},
			pods: []*corev1.Pod{
				pod("amd-9000", "1").HostPort(9000).NodeAffinity(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").Obj(),
				pod("arm-8000", "1").HostPort(8000).NodeAffinity(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj(),
			},
			claims: 2,
			check: func(t *testing.T, r *result) {
				if c := r.claimOf("arm-8000"); c == nil || c.InstanceTypes[0].Name != "m6g.xlarge" {
					t.Errorf("arm-8000 not on m6g.xlarge: %v", c)
				}
			},
		},
		"a host port an arm64 daemonset binds keeps the pod off arm64 types": {
			daemonsets: []*appsv1.DaemonSet{armPort9000.Obj()},
			pods:       []*corev1.Pod{pod("p", "1").HostPort(9000).Obj()}, claims: 1,
			check: func(t *testing.T, r *result) {
				c := r.claimOf("p")
				if c == nil {
					t.Fatal("p has no claim")
				}
				for _, it := range c.InstanceTypes {
					if it.Name == "m6g.xlarge" {
						t.Errorf("claim may launch m6g.xlarge, whose daemonset binds port 9000")
					}
				}
			},
		},
		"a host port its arch's daemonset binds leaves the pod unschedulable": {
			daemonsets:    []*appsv1.DaemonSet{armPort9000.Obj()},
			pods:          []*corev1.Pod{pod("p", "1").HostPort(9000).NodeSelector(corev1.LabelArchStable, "arm64").Obj()},
			claims:        0,
			unschedulable: map[string]string{"p": ""},
		},
		"daemonset sized with its namespace's LimitRange defaults": {
			daemonsets: []*appsv1.DaemonSet{daemonset.Sized(noRequests.Obj(), nil, []*corev1.LimitRange{{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "defaults"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
					Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: mustQ("1")}, Default: corev1.ResourceList{corev1.ResourceCPU: mustQ("1")},
				}}},
			}})},
			pods: []*corev1.Pod{pod("p", "1500m").Obj()}, claims: 1, check: checks(firstType("c5.xlarge"), claimCPU(0, "2500m")),
		},
		"a starting node keeps room for daemonsets not running yet": {
			daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			nodes:      []simulator.Node{dtesting.MakeNode("n").NotInitialized().Alloc("cpu", "2", "memory", "4Gi", "pods", "10").Obj()},
			pods:       []*corev1.Pod{pod("p", "1600m").Obj()}, claims: 1,
		},
		"a starting node already running the daemonset": {
			daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			nodes:      []simulator.Node{dtesting.MakeNode("n").NotInitialized().Alloc("cpu", "2", "memory", "4Gi", "pods", "10").Pod(agent.Pod("n")).Obj()},
			pods:       []*corev1.Pod{pod("p", "1500m").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
		"an initialized node counts only the daemon pods bound to it": {
			daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			nodes:      []simulator.Node{dtesting.MakeNode("n").Alloc("cpu", "2", "memory", "4Gi", "pods", "10").Obj()},
			pods:       []*corev1.Pod{pod("p", "1600m").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
	})
}

func TestNodePools(t *testing.T) {
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	anti := func(name string, n int) []*corev1.Pod {
		return dtesting.MakePod(name).Req("cpu", "1500m").Label("app", name).PodAntiAffinity(hostKey, sel("app", name)).Replicas(n)
	}
	mOnly := func(name string) *dtesting.NodePoolWrapper {
		return dtesting.MakeNodePool(name).Req(categoryKey, corev1.NodeSelectorOpIn, "m")
	}
	cOnly := func(name string) *dtesting.NodePoolWrapper {
		return dtesting.MakeNodePool(name).Req(categoryKey, corev1.NodeSelectorOpIn, "c")
	}
	noOfferings := []*cloudprovider.InstanceType{dtesting.MakeInstanceType("ghost").NoOfferings().Obj()}
	spotGone := []*cloudprovider.InstanceType{dtesting.MakeInstanceType("half").
		Offering(fake.Zone1, v1.CapacityTypeSpot, 0.1, false).Offering(fake.Zone2, v1.CapacityTypeOnDemand, 0.5, true).Obj()}
	families := func(minValues int) *dtesting.NodePoolWrapper {
		return dtesting.MakeNodePool("families").ReqMinValues(familyKey, corev1.NodeSelectorOpIn, minValues, "c5", "m5", "m6g")
	}
	runCases(t, map[string]tcase{
		"the heavier nodepool wins even when dearer": {
			pools: []simulator.NodePool{nodepool(cOnly("cheap").Weight(10)), nodepool(mOnly("preferred").Weight(50))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1, check: poolsOf(map[string]string{"p": "preferred"}),
		},
		"a lighter nodepool takes what the heavier cannot": {
			pools: []simulator.NodePool{
				nodepool(dtesting.MakeNodePool("small").Weight(50).Req(cpuKey, corev1.NodeSelectorOpLt, "3")),
				nodepool(dtesting.MakeNodePool("any").Weight(10)),
			},
			pods: []*corev1.Pod{dtesting.MakePod("big").Req("cpu", "6").Obj()}, claims: 1,
			check: poolsOf(map[string]string{"big": "any"}),
		},
		"pods that fit the heavier nodepool use it": {
			pools: []simulator.NodePool{
				nodepool(dtesting.MakeNodePool("small").Weight(50).Req(cpuKey, corev1.NodeSelectorOpLt, "3")),
				nodepool(dtesting.MakeNodePool("any").Weight(10)),
			},
			pods: []*corev1.Pod{pod("small").Obj()}, claims: 1, check: poolsOf(map[string]string{"small": "small"}),
		},
		"equal weights: the cheaper nodepool": {
			pools: []simulator.NodePool{nodepool(mOnly("m")), nodepool(cOnly("c"))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1, check: poolsOf(map[string]string{"p": "c"}),
		},
		"equal weight and price: name order, descending as in Karpenter": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("alpha")), nodepool(dtesting.MakeNodePool("beta"))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1, check: poolsOf(map[string]string{"p": "beta"}),
		},
		"nodepool label selects the pool": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("alpha")), nodepool(dtesting.MakeNodePool("beta"))},
			pods:  []*corev1.Pod{pod("p").NodeSelector(v1.NodePoolLabelKey, "alpha").Obj()}, claims: 1, check: poolsOf(map[string]string{"p": "alpha"}),
		},
		"cpu limit caps the nodes": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("cpu", "5"))},
			pods:  anti("a", 3), claims: 2,
			unschedulable: map[string]string{"a-2": "nodepool default: limits reached (cpu 1 left)"},
		},
		"limited claims keep only options within the limit": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("cpu", "5"))},
			pods:  anti("a", 2), claims: 2,
			check: optionsAll("within the limit", func(n string) bool { return strings.HasSuffix(n, ".large") }),
		},
		"limits count existing nodes of the pool": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("cpu", "4"))},
			nodes: []simulator.Node{dtesting.MakeNode("n").NodePool("default").Capacity("cpu", "3").Alloc("cpu", "100m", "pods", "10").Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "limits reached"},
		},
		"limits use the usage given for the pool": {
			pools: []simulator.NodePool{{NodePool: dtesting.MakeNodePool("default").Limit("cpu", "10").Obj(), InstanceTypes: testCatalog(),
				Usage: corev1.ResourceList{corev1.ResourceCPU: mustQ("9")}}},
			pods:          []*corev1.Pod{pod("p").Obj()},
			claims:        0,
			unschedulable: map[string]string{"p": "limits reached"},
		},
		"node-count limit": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("nodes", "2"))},
			pods:  anti("a", 3), claims: 2, unschedulable: map[string]string{"a-2": "limit on nodes reached"},
		},
		"a limit reached mid-plan falls back to the next nodepool": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("first").Weight(10).Limit("cpu", "2")), nodepool(dtesting.MakeNodePool("second"))},
			pods:  anti("a", 3), claims: 3,
			check: func(t *testing.T, r *result) {
				counts := r.countBy("a-", func(p string) string { return r.claimOf(p).NodePool })
				if counts["first"] != 1 || counts["second"] != 2 {
					t.Errorf("per nodepool %v, want first 1, second 2", counts)
				}
			},
		},
		"contradictory requirements make a nodepool unusable": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("broken").
				Req(categoryKey, corev1.NodeSelectorOpIn, "c").Req(categoryKey, corev1.NodeSelectorOpNotIn, "c"))},
			pods: []*corev1.Pod{pod("p").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "nodepool broken: cannot be used: contradictory requirements"},
		},
		"invalid requirement operator": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("broken").Req(categoryKey, "Sometimes", "c"))},
			pods:   []*corev1.Pod{pod("p").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "invalid requirements"},
		},
		"instance types without offerings": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), noOfferings...)},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "no instance type has an available offering"},
		},
		"unavailable offerings are skipped": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), spotGone...)},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
			check: checks(claimReq(0, zoneKey, "topology.kubernetes.io/zone In [zone-2]"), claimReq(0, ctKey, "karpenter.sh/capacity-type In [on-demand]")),
		},
		"nil nodepool is ignored with a reason": {
			pools: []simulator.NodePool{{}, nodepool(dtesting.MakeNodePool("default"))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"minValues met": {
			pools: []simulator.NodePool{nodepool(families(3))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
			check: func(t *testing.T, r *result) {
				fams := map[string]bool{}
				for _, it := range r.plan.NewNodeClaims[0].InstanceTypes {
					fams[strings.Split(it.Name, ".")[0]] = true
				}
				if len(fams) < 3 {
					t.Errorf("families %v, want 3", fams)
				}
				if r, _ := r.plan.NewNodeClaims[0].Requirements.Get(familyKey); r.MinValues() != 3 {
					t.Errorf("minValues not kept on the claim: %s", r)
				}
			},
		},
		"minValues not met under Strict": {
			pools: []simulator.NodePool{nodepool(families(3))},
			pods:  []*corev1.Pod{pod("p").NodeSelector(corev1.LabelArchStable, "amd64").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "minValues"},
		},
		"minValues relaxed under BestEffort": {
			opts:  simulator.Options{MinValuesPolicy: simulator.MinValuesBestEffort},
			pools: []simulator.NodePool{nodepool(families(3))},
			pods:  []*corev1.Pod{pod("p").NodeSelector(corev1.LabelArchStable, "amd64").Obj()}, claims: 1,
			check: func(t *testing.T, r *result) {
				if !r.plan.NewNodeClaims[0].MinValuesRelaxed {
					t.Errorf("claim not marked as relaxed")
				}
			},
		},
		"minValues on instance types stops a claim from growing too far": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").ReqMinValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists, 3))},
			pods:  dtesting.MakePod("p").Req("cpu", "4").Replicas(3), claims: 3,
			check: func(t *testing.T, r *result) {
				for i, c := range r.plan.NewNodeClaims {
					if len(c.InstanceTypes) < 3 {
						t.Errorf("claim %d has %d options, want at least 3", i, len(c.InstanceTypes))
					}
				}
			},
		},
		"zones come from the offerings": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"),
				dtesting.MakeInstanceType("z2").Offering(fake.Zone2, v1.CapacityTypeOnDemand, 0.2, true).Offering(fake.Zone2, v1.CapacityTypeSpot, 0.1, true).Obj())},
			pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
			check: checks(claimReq(0, zoneKey, "topology.kubernetes.io/zone In [zone-2]"), func(t *testing.T, r *result) {
				if p := r.plan.NewNodeClaims[0].Price; p != 0.1 {
					t.Errorf("price %v, want the spot price 0.1", p)
				}
			}),
		},
		"no nodepool at all": {
			pools: []simulator.NodePool{}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "no nodepool"},
		},
	})
}
