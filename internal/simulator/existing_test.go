package simulator_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

func roomy(name string) *dtesting.NodeWrapper {
	return dtesting.MakeNode(name).Zone(fake.Zone1).Alloc("cpu", "4", "memory", "16Gi", "pods", "20")
}

func TestExistingNodes(t *testing.T) {
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	runCases(t, map[string]tcase{
		"existing room is used before a new node": {
			nodes: []simulator.Node{roomy("n").Obj()}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
		"initialized nodes are tried first": {
			nodes:  []simulator.Node{roomy("a").NotInitialized().Obj(), roomy("b").Obj()},
			pods:   []*corev1.Pod{pod("p").Obj()},
			claims: 0, placed: map[string]string{"p": "b"},
		},
		"nodes are tried by name": {
			nodes: []simulator.Node{roomy("n2").Obj(), roomy("n1").Obj()}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "n1"},
		},
		"a node consolidation means to remove is tried after the others": {
			nodes: []simulator.Node{roomy("n1").Disfavored().Obj(), roomy("n2").Obj()}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "n2"},
		},
		"a node consolidation means to remove takes pods before a new node": {
			nodes: []simulator.Node{roomy("n1").Disfavored().Obj(), roomy("n2").Alloc("cpu", "1", "memory", "16Gi", "pods", "20").Obj()},
			pods:  []*corev1.Pod{pod("p").Obj(), pod("q").Obj()}, claims: 0, placed: map[string]string{"p": "n2", "q": "n1"},
		},
		"a node consolidation means to remove is tried after in-flight claims": {
			nodes: []simulator.Node{roomy("n1").Disfavored().Obj(), roomy("claim-1").InFlight().NodePool("default").Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "claim-1"},
		},
		"in-flight nodeclaims take pods": {
			nodes: []simulator.Node{roomy("claim-1").InFlight().NodePool("default").Obj()}, pods: []*corev1.Pod{pod("p").Obj()},
			claims: 0, placed: map[string]string{"p": "claim-1"},
		},
		"a pod is not placed on a node the kube-scheduler refused it": {
			nodes: []simulator.Node{roomy("n1").Obj(), roomy("n2").Obj()}, pods: []*corev1.Pod{pod("p").Obj(), pod("q").Obj()},
			refused: map[types.UID][]string{"uid-default-p": {"n1"}},
			claims:  0, placed: map[string]string{"p": "n2", "q": "n1"},
		},
		"a pod refused by its only node gets a new one": {
			nodes: []simulator.Node{roomy("n").Obj()}, pods: []*corev1.Pod{pod("p").Obj(), pod("q").Obj()},
			refused: map[types.UID][]string{"uid-default-p": {"n", "gone"}},
			claims:  1, placed: map[string]string{"q": "n"},
		},
		"a refused node is named in the reason when nothing else fits": {
			nodes: []simulator.Node{roomy("n").Obj()}, pods: []*corev1.Pod{pod("p").Obj()},
			pools:         []simulator.NodePool{pool(dtesting.MakeNodePool("default").Limit("cpu", "0").Obj())},
			refused:       map[types.UID][]string{"uid-default-p": {"n"}},
			claims:        0,
			unschedulable: map[string]string{"p": "the hand-off to the kube-scheduler gave up on this node"},
		},
		"a node being deleted takes no pods": {
			nodes: []simulator.Node{roomy("n").Deleting().Obj()}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"a cordoned node takes no pods": {
			nodes: []simulator.Node{roomy("n").Cordoned().Obj()}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"a starting node's not-ready taint is ignored": {
			nodes:  []simulator.Node{roomy("n").NotInitialized().Taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule).Obj()},
			pods:   []*corev1.Pod{pod("p").Obj()},
			claims: 0, placed: map[string]string{"p": "n"},
		},
		"a ready node's not-ready taint is not": {
			nodes: []simulator.Node{roomy("n").Taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule).Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"a starting node's startup taints are ignored": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").StartupTaint("cni", "", corev1.TaintEffectNoSchedule))},
			nodes: []simulator.Node{roomy("n").NodePool("default").NotInitialized().Taint("cni", "", corev1.TaintEffectNoSchedule).Taint(v1.UnregisteredTaintKey, "", corev1.TaintEffectNoExecute).Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
		"the disrupted taint keeps pods off": {
			nodes: []simulator.Node{roomy("n").Taint(v1.DisruptedTaintKey, "", corev1.TaintEffectNoSchedule).Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"what does not fit on existing nodes gets a new node": {
			nodes: []simulator.Node{roomy("n").Alloc("cpu", "2", "memory", "16Gi", "pods", "20").Obj()},
			pods:  pod("p").Replicas(3), claims: 1,
			placed: map[string]string{"p-0": "n", "p-1": "n"},
		},
		"a deferred pod takes only the room the others leave": {
			nodes:    []simulator.Node{roomy("n").Alloc("cpu", "2", "memory", "16Gi", "pods", "20").Obj()},
			pods:     []*corev1.Pod{dtesting.MakePod("stand-in").Req("cpu", "1500m").Obj(), dtesting.MakePod("real").Req("cpu", "1").Obj()},
			deferred: map[types.UID]bool{"uid-default-stand-in": true},
			claims:   1, placed: map[string]string{"real": "n"},
		},
		"without deferral the larger pod goes first": {
			nodes:  []simulator.Node{roomy("n").Alloc("cpu", "2", "memory", "16Gi", "pods", "20").Obj()},
			pods:   []*corev1.Pod{dtesting.MakePod("stand-in").Req("cpu", "1500m").Obj(), dtesting.MakePod("real").Req("cpu", "1").Obj()},
			claims: 1, placed: map[string]string{"stand-in": "n"},
		},
		"bound pods use up a node": {
			nodes: []simulator.Node{roomy("n").Alloc("cpu", "2", "memory", "16Gi", "pods", "20").Pod(dtesting.MakePod("old").Req("cpu", "1500m").Obj()).Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"node selector against existing node labels": {
			nodes: []simulator.Node{roomy("n1").Obj(), roomy("n2").Zone(fake.Zone2).Obj()},
			pods:  []*corev1.Pod{pod("p").NodeSelector(zoneKey, fake.Zone2).Obj()}, claims: 0, placed: map[string]string{"p": "n2"},
		},
		"required label missing on the node": {
			nodes: []simulator.Node{roomy("n").Obj()},
			pods:  []*corev1.Pod{pod("p").NodeAffinity("gpu", corev1.NodeSelectorOpExists).Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "1 node selector or affinity mismatch"},
		},
		"NotIn matches a node without the label": {
			nodes: []simulator.Node{roomy("n").Obj()},
			pods:  []*corev1.Pod{pod("p").NodeAffinity("gpu", corev1.NodeSelectorOpNotIn, "true").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
	})
}

func TestWhatIf(t *testing.T) {
	web := sel("app", "web")
	onA := []*corev1.Pod{dtesting.MakePod("a1").Req("cpu", "1").Obj(), dtesting.MakePod("a2").Req("cpu", "1").Obj()}
	zero, one := 0, 1
	guard := dtesting.MakePod("g").Req("cpu", "1").Label("app", "web").PodAntiAffinity(hostKey, web).Obj()
	peer := dtesting.MakePod("peer").Req("cpu", "1").Label("app", "web").Obj()
	spreadPod := func(name string) *corev1.Pod {
		return dtesting.MakePod(name).Req("cpu", "1").Label("app", "web").ZoneSpread(1, web).Obj()
	}
	w1 := spreadPod("w1")
	runCases(t, map[string]tcase{
		"removing a node moves its pods onto the others": {
			nodes: []simulator.Node{roomy("a").Pod(onA...).Obj(), roomy("b").Obj()},
			pods:  onA, request: func(r *simulator.Request) { r.RemoveNodes = []string{"a"}; r.MaxNewNodeClaims = &zero },
			claims: 0, placed: map[string]string{"a1": "b", "a2": "b"},
		},
		"pods that fit nowhere else, with no new node allowed": {
			nodes: []simulator.Node{roomy("a").Pod(onA...).Obj(), roomy("b").Alloc("cpu", "1500m", "pods", "10").Obj()},
			pods:  onA, request: func(r *simulator.Request) { r.RemoveNodes = []string{"a"}; r.MaxNewNodeClaims = &zero },
			claims: 0, placed: map[string]string{"a1": "b"},
			unschedulable: map[string]string{"a2": "no new nodeclaim allowed (at most 0)"},
		},
		"one cheaper replacement": {
			nodes: []simulator.Node{roomy("a").Pod(onA...).Obj()},
			pods:  onA, request: func(r *simulator.Request) {
				r.RemoveNodes = []string{"a"}
				r.MaxNewNodeClaims = &one
				r.MaxNewNodeClaimPrice = 1.5
			},
			claims: 1, check: firstType("c5.xlarge"),
		},
		"no replacement cheap enough": {
			nodes: []simulator.Node{roomy("a").Pod(onA...).Obj()},
			pods:  onA, request: func(r *simulator.Request) {
				r.RemoveNodes = []string{"a"}
				r.MaxNewNodeClaims = &one
				r.MaxNewNodeClaimPrice = 0.5
			},
			claims: 0, unschedulable: map[string]string{"a1": "costs less than 0.5000/h", "a2": ""},
		},
		"avoided nodes keep their pods but get no new ones": {
			nodes: []simulator.Node{roomy("a").Pod(onA...).Obj(), roomy("b").Obj()},
			pods:  []*corev1.Pod{dtesting.MakePod("p").Req("cpu", "1").Obj()}, request: func(r *simulator.Request) { r.AvoidNodes = []string{"b"} },
			claims: 0, placed: map[string]string{"p": "a"},
		},
		"a moved pod keeps its anti-affinity": {
			nodes: []simulator.Node{roomy("n1").Pod(guard).Obj(), roomy("n2").Pod(peer).Obj(), roomy("n3").Obj()},
			pods:  []*corev1.Pod{guard}, request: func(r *simulator.Request) { r.RemoveNodes = []string{"n1"}; r.MaxNewNodeClaims = &zero },
			claims: 0, placed: map[string]string{"g": "n3"},
		},
		"a moved pod no longer counts where it was": {
			nodes: []simulator.Node{
				roomy("n1").Pod(w1).Obj(),
				roomy("n2").Zone(fake.Zone2).Pod(spreadPod("w2")).Obj(),
				roomy("n3").Zone(fake.Zone3).Alloc("cpu", "100m", "pods", "10").Obj(),
			},
			pods: []*corev1.Pod{w1}, request: func(r *simulator.Request) { r.RemoveNodes = []string{"n1"}; r.MaxNewNodeClaims = &one },
			claims: 1,
			check: func(t *testing.T, r *result) {
				if z := r.zone("w1"); z == fake.Zone2 || z == "" {
					t.Errorf("w1 in zone %q; zone-2 already has a pod and zones 1 and 3 have none", z)
				}
			},
		},
		"removing a node frees its share of the pool's limits": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("cpu", "4"))},
			nodes: []simulator.Node{roomy("a").NodePool("default").Capacity("cpu", "4").Pod(onA...).Obj()},
			pods:  onA, request: func(r *simulator.Request) { r.RemoveNodes = []string{"a"} },
			claims: 1,
		},
		"moving a pod within the cluster frees its node's room": {
			nodes:  []simulator.Node{roomy("a").Alloc("cpu", "2", "memory", "16Gi", "pods", "20").Pod(onA...).Obj()},
			pods:   []*corev1.Pod{onA[0], dtesting.MakePod("new").Req("cpu", "1").Obj()},
			claims: 1, placed: map[string]string{"a1": "a"},
		},
	})
}

// TestModelIsNotModified solves different requests against one model, in
// both orders, and checks each plan equals the one a fresh model gives.
func TestModelIsNotModified(t *testing.T) {
	web := sel("app", "web")
	nodes := []simulator.Node{
		roomy("n1").Pod(dtesting.MakePod("a").Req("cpu", "1").Label("app", "web").ZoneSpread(1, web).Obj()).Obj(),
		roomy("n2").Zone(fake.Zone2).Pod(dtesting.MakePod("b").Req("cpu", "3").Label("app", "web").PodAntiAffinity(hostKey, web).Obj()).Obj(),
		roomy("n3").Zone(fake.Zone3).Obj(),
	}
	snap := &simulator.Snapshot{
		Nodes:     nodes,
		NodePools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("cpu", "20"))},
		Pods:      dtesting.MakePod("p").Req("cpu", "1").Label("app", "web").ZoneSpread(1, web).Replicas(5),
	}
	one := 1
	requests := []simulator.Request{
		{Pods: snap.Pods},
		{Pods: nodes[0].Pods, RemoveNodes: []string{"n1"}, MaxNewNodeClaims: &one},
		{Pods: nodes[1].Pods, RemoveNodes: []string{"n2"}},
		{Pods: append(nodes[0].Pods, snap.Pods...), AvoidNodes: []string{"n3"}},
	}
	fresh := make([]string, len(requests))
	for i, r := range requests {
		fresh[i] = dump(simulator.New(snap, simulator.Options{}).Solve(r))
	}
	m := simulator.New(snap, simulator.Options{})
	for round := range 2 {
		for i := range requests {
			j := i
			if round == 1 {
				j = len(requests) - 1 - i
			}
			if diff := cmp.Diff(fresh[j], dump(m.Solve(requests[j]))); diff != "" {
				t.Errorf("round %d request %d differs from a fresh model (-fresh +reused):\n%s", round, j, diff)
			}
		}
	}
}

// TestConcurrentSolves runs what-if solves against one model from several
// goroutines (run it with -race): each plan must equal the serial one.
func TestConcurrentSolves(t *testing.T) {
	c := whatIfCluster(60)
	m := simulator.New(c.snap, simulator.Options{})
	one := 1
	var requests []simulator.Request
	for _, n := range c.snap.Nodes[:12] {
		requests = append(requests, simulator.Request{Pods: append(n.Pods, dtesting.MakePod("extra-"+n.Name).Req("cpu", "3").Obj()),
			RemoveNodes: []string{n.Name}, MaxNewNodeClaims: &one})
	}
	want := make([]string, len(requests))
	for i, r := range requests {
		want[i] = dump(m.Solve(r))
	}
	got := make([]string, len(requests))
	var wg sync.WaitGroup
	for i, r := range requests {
		wg.Go(func() { got[i] = dump(m.Solve(r)) })
	}
	wg.Wait()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("concurrent solves differ from serial ones (-serial +concurrent):\n%s", diff)
	}
}
