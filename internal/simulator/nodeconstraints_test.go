package simulator_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// claimReq asserts that claim i's requirement on key renders as want.
func claimReq(i int, key, want string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		if i >= len(r.plan.NewNodeClaims) {
			t.Fatalf("no claim %d", i)
		}
		got, _ := r.plan.NewNodeClaims[i].Requirements.Get(key)
		if got.String() != want {
			t.Errorf("claim %d requirement on %s is %q, want %q", i, key, got.String(), want)
		}
	}
}

// optionsAll asserts every option of every claim satisfies pred.
func optionsAll(desc string, pred func(name string) bool) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		for i, c := range r.plan.NewNodeClaims {
			for _, it := range c.InstanceTypes {
				if !pred(it.Name) {
					t.Errorf("claim %d option %s is not %s", i, it.Name, desc)
				}
			}
		}
	}
}

func checks(fns ...func(*testing.T, *result)) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		for _, f := range fns {
			f(t, r)
		}
	}
}

func nsr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestNodeSelectorsAndAffinity(t *testing.T) {
	pod := func() *dtesting.PodWrapper { return dtesting.MakePod("p").Req("cpu", "1") }
	runCases(t, map[string]tcase{
		"nodeSelector on zone": {
			pods: []*corev1.Pod{pod().NodeSelector(zoneKey, fake.Zone2).Obj()}, claims: 1,
			check: claimReq(0, zoneKey, "topology.kubernetes.io/zone In [zone-2]"),
		},
		"nodeSelector on an instance-type label": {
			pods: []*corev1.Pod{pod().NodeSelector(categoryKey, "m").Obj()}, claims: 1, check: firstType("m5.large"),
		},
		"nodeSelector on a label no nodepool provides": {
			pods:   []*corev1.Pod{pod().NodeSelector("team", "a").Obj()},
			claims: 0, unschedulable: map[string]string{"p": `label "team" is not provided by the nodepool: team In [a] (pod nodeSelector)`},
		},
		"nodeSelector on a nodepool template label": {
			pools: []simulator.NodePool{
				nodepool(dtesting.MakeNodePool("plain")),
				nodepool(dtesting.MakeNodePool("team-a").Label("team", "a")),
			},
			pods: []*corev1.Pod{pod().NodeSelector("team", "a").Obj()}, claims: 1,
			check: func(t *testing.T, r *result) {
				if got := r.plan.NewNodeClaims[0].NodePool; got != "team-a" {
					t.Errorf("nodepool %s, want team-a", got)
				}
			},
		},
		"nodeSelector conflicting with the nodepool": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("gpu").Req(categoryKey, corev1.NodeSelectorOpIn, "p", "g"))},
			pods:  []*corev1.Pod{pod().NodeSelector(categoryKey, "c").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "nodepool gpu: incompatible requirements: karpenter.k8s.aws/instance-category In [g p] conflicts with karpenter.k8s.aws/instance-category In [c] (pod nodeSelector)"},
		},
		"affinity In several values": {
			pods: []*corev1.Pod{pod().NodeAffinity(categoryKey, corev1.NodeSelectorOpIn, "m", "p").Obj()}, claims: 1,
			check: optionsAll("m or p", func(n string) bool { return strings.HasPrefix(n, "m") || strings.HasPrefix(n, "p") }),
		},
		"affinity NotIn": {
			pods: []*corev1.Pod{pod().NodeAffinity(familyKey, corev1.NodeSelectorOpNotIn, "c5").Obj()}, claims: 1,
			check: optionsAll("not c5", func(n string) bool { return !strings.HasPrefix(n, "c5") }),
		},
		"affinity Exists on a type label": {
			pods: []*corev1.Pod{pod().NodeAffinity(cpuKey, corev1.NodeSelectorOpExists).Obj()}, claims: 1, check: firstType("c5.large"),
		},
		"affinity DoesNotExist on a label every type has": {
			pods: []*corev1.Pod{pod().NodeAffinity(categoryKey, corev1.NodeSelectorOpDoesNotExist).Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "no instance type matches"},
		},
		"affinity Gt on an integer label": {
			pods: []*corev1.Pod{pod().NodeAffinity(cpuKey, corev1.NodeSelectorOpGt, "4").Obj()}, claims: 1,
			check: checks(firstType("c5.2xlarge"), optionsAll("over 4 cpu", func(n string) bool { return strings.Contains(n, "2xlarge") || strings.Contains(n, "4xlarge") })),
		},
		"affinity Lt on an integer label": {
			pods: []*corev1.Pod{pod().NodeAffinity(cpuKey, corev1.NodeSelectorOpLt, "4").Obj()}, claims: 1,
			check: optionsAll("2 cpu", func(n string) bool { return strings.HasSuffix(n, ".large") }),
		},
		"nodepool Gte and Lte": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("four").Req(cpuKey, v1.NodeSelectorOpGte, "4").Req(cpuKey, v1.NodeSelectorOpLte, "4"))},
			pods:  []*corev1.Pod{pod().Obj()}, claims: 1,
			check: optionsAll("4 cpu", func(n string) bool {
				return strings.HasSuffix(n, ".xlarge") && !strings.HasSuffix(n, "2xlarge") && !strings.HasSuffix(n, "4xlarge")
			}),
		},
		"OR-ed terms: the satisfiable one is used": {
			pods: []*corev1.Pod{pod().
				NodeAffinityTerm(nsr(zoneKey, corev1.NodeSelectorOpIn, "zone-9")).
				NodeAffinityTerm(nsr(categoryKey, corev1.NodeSelectorOpIn, "m")).Obj()},
			claims: 1, check: firstType("m5.large"),
		},
		"OR-ed terms: none satisfiable": {
			pods: []*corev1.Pod{pod().
				NodeAffinityTerm(nsr(zoneKey, corev1.NodeSelectorOpIn, "zone-9")).
				NodeAffinityTerm(nsr("team", corev1.NodeSelectorOpIn, "x")).Obj()},
			claims: 0, unschedulable: map[string]string{"p": " or "},
		},
		"OR-ed terms let a pod join a claim another pod pinned": {
			pods: []*corev1.Pod{
				dtesting.MakePod("big").Req("cpu", "2").NodeSelector(zoneKey, fake.Zone2).Obj(),
				dtesting.MakePod("small").Req("cpu", "1").
					NodeAffinityTerm(nsr(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1)).
					NodeAffinityTerm(nsr(zoneKey, corev1.NodeSelectorOpIn, fake.Zone2)).Obj(),
			},
			claims: 1, together: [][]string{{"big", "small"}},
		},
		"arm64 selector": {
			pods: []*corev1.Pod{pod().NodeSelector(corev1.LabelArchStable, "arm64").Obj()}, claims: 1, check: firstType("m6g.xlarge"),
		},
		"spot is offered in two zones": {
			pods: []*corev1.Pod{pod().NodeSelector(ctKey, v1.CapacityTypeSpot).Obj()}, claims: 1,
			check: checks(claimReq(0, ctKey, "karpenter.sh/capacity-type In [spot]"), claimReq(0, zoneKey, "topology.kubernetes.io/zone In [zone-1 zone-2]")),
		},
		"spot in zone-3 is not offered": {
			pods:   []*corev1.Pod{pod().NodeSelector(ctKey, v1.CapacityTypeSpot).NodeSelector(zoneKey, fake.Zone3).Obj()},
			claims: 0, unschedulable: map[string]string{"p": "no instance type matching the requirements has an available offering"},
		},
		"on-demand nodepool rejects a spot pod": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("od").Req(ctKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))},
			pods:   []*corev1.Pod{pod().NodeSelector(ctKey, v1.CapacityTypeSpot).Obj()},
			claims: 0, unschedulable: map[string]string{"p": "karpenter.sh/capacity-type In [on-demand] conflicts with karpenter.sh/capacity-type In [spot]"},
		},
		"nodepool zone requirement narrows the claim": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("z3").Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone3))},
			pods:   []*corev1.Pod{pod().Obj()},
			claims: 1, check: checks(claimReq(0, zoneKey, "topology.kubernetes.io/zone In [zone-3]"), claimReq(0, ctKey, "karpenter.sh/capacity-type In [on-demand]")),
		},
		"hostname nodeSelector needs that existing node": {
			nodes:  []simulator.Node{dtesting.MakeNode("node-a").Alloc("cpu", "4", "memory", "8Gi", "pods", "10").Obj()},
			pods:   []*corev1.Pod{pod().NodeSelector(hostKey, "node-a").Obj()},
			claims: 0, placed: map[string]string{"p": "node-a"},
		},
		"hostname nodeSelector on a full node": {
			nodes:  []simulator.Node{dtesting.MakeNode("node-a").Alloc("cpu", "500m", "memory", "8Gi", "pods", "10").Obj()},
			pods:   []*corev1.Pod{pod().NodeSelector(hostKey, "node-a").Obj()},
			claims: 0, unschedulable: map[string]string{"p": "requires an existing node"},
		},
		"node name match field": {
			nodes: []simulator.Node{
				dtesting.MakeNode("node-a").Alloc("cpu", "4", "pods", "10").Obj(),
				dtesting.MakeNode("node-b").Alloc("cpu", "4", "pods", "10").Obj(),
			},
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := pod().Obj()
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{nsr(requirements.NodeNameField, corev1.NodeSelectorOpIn, "node-b")}}},
				}}}
				return p
			}()},
			claims: 0, placed: map[string]string{"p": "node-b"},
		},
	})
}

func TestTaintsAndHostPorts(t *testing.T) {
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	tainted := nodepool(dtesting.MakeNodePool("gpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule))
	ds := dtesting.MakeDaemonSet("exporter", dtesting.MakePod("x").Req("cpu", "100m").HostPort(9100)).Obj()
	runCases(t, map[string]tcase{
		"untolerated nodepool taint": {
			pools: []simulator.NodePool{tainted}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "nodepool gpu: untolerated taint dedicated=gpu:NoSchedule"},
		},
		"toleration Equal": {
			pools: []simulator.NodePool{tainted}, pods: []*corev1.Pod{pod("p").Toleration("dedicated", corev1.TolerationOpEqual, "gpu", corev1.TaintEffectNoSchedule).Obj()}, claims: 1,
		},
		"toleration with the wrong value": {
			pools: []simulator.NodePool{tainted}, pods: []*corev1.Pod{pod("p").Toleration("dedicated", corev1.TolerationOpEqual, "cpu", corev1.TaintEffectNoSchedule).Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "untolerated taint"},
		},
		"toleration Exists for every key": {
			pools: []simulator.NodePool{tainted}, pods: []*corev1.Pod{pod("p").Toleration("", corev1.TolerationOpExists, "", "").Obj()}, claims: 1,
		},
		"NoExecute taint needs a toleration": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("ne").Taint("k", "v", corev1.TaintEffectNoExecute))},
			pods:   []*corev1.Pod{pod("bare").Obj(), pod("ok").Toleration("k", corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute).Obj()},
			claims: 1, unschedulable: map[string]string{"bare": "untolerated taint k=v:NoExecute"},
		},
		"startup taints need no toleration": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("cni").StartupTaint("cni-not-ready", "", corev1.TaintEffectNoSchedule))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"tainted pools are used by pods that tolerate them, others go elsewhere": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("general")), tainted},
			pods: []*corev1.Pod{
				pod("plain").Obj(),
				pod("tol").Toleration("dedicated", corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule).NodeSelector(v1.NodePoolLabelKey, "gpu").Obj(),
			},
			claims: 2,
			check: func(t *testing.T, r *result) {
				if r.claimOf("plain").NodePool != "general" || r.claimOf("tol").NodePool != "gpu" {
					t.Errorf("plain on %s, tol on %s", r.claimOf("plain").NodePool, r.claimOf("tol").NodePool)
				}
			},
		},
		"existing node taint blocks the pod": {
			nodes:  []simulator.Node{dtesting.MakeNode("n").Alloc("cpu", "8", "pods", "10").Taint("maint", "", corev1.TaintEffectNoSchedule).Obj()},
			pods:   []*corev1.Pod{pod("p").Obj()},
			claims: 1,
		},
		"same host port forces separate nodes": {
			pods: []*corev1.Pod{pod("a").HostPort(80).Obj(), pod("b").HostPort(80).Obj()}, claims: 2, apart: [][]string{{"a", "b"}},
		},
		"different host ports share a node": {
			pods: []*corev1.Pod{pod("a").HostPort(80).Obj(), pod("b").HostPort(443).Obj()}, claims: 1, together: [][]string{{"a", "b"}},
		},
		"host port on an existing node is taken": {
			nodes: []simulator.Node{dtesting.MakeNode("n").Alloc("cpu", "8", "memory", "8Gi", "pods", "10").
				Pod(dtesting.MakePod("web").HostPort(80).Obj()).Obj()},
			pods: []*corev1.Pod{pod("p").HostPort(80).Obj()}, claims: 1,
		},
		"host port used by a daemonset on every new node": {
			daemonsets: []*appsDaemonSet{ds},
			pods:       []*corev1.Pod{pod("p").HostPort(9100).Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "host port 9100/TCP"},
		},
	})
}
