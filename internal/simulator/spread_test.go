package simulator_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// perZone asserts how many of the pods named prefix-* land in each zone.
func perZone(prefix string, want map[string]int) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		if diff := cmp.Diff(want, r.countBy(prefix, r.zone)); diff != "" {
			t.Errorf("pods per zone (-want +got):\n%s", diff)
		}
	}
}

func TestTopologySpread(t *testing.T) {
	web := sel("app", "web")
	spreadPod := func(name string, opts ...dtesting.SpreadOption) *dtesting.PodWrapper {
		return dtesting.MakePod(name).Req("cpu", "1").Label("app", "web").ZoneSpread(1, web, opts...)
	}
	inZones := func(p *dtesting.PodWrapper, zones ...string) *dtesting.PodWrapper {
		return p.NodeAffinity(zoneKey, corev1.NodeSelectorOpIn, zones...)
	}
	webPod := func(name string) *corev1.Pod { return dtesting.MakePod(name).Label("app", "web").Obj() }
	odNode := func(name, zone string, pods ...*corev1.Pod) simulator.Node {
		return dtesting.MakeNode(name).Zone(zone).Label(ctKey, "on-demand").Alloc("cpu", "50m", "memory", "16Gi", "pods", "20").Pod(pods...).Obj()
	}
	racks := []simulator.NodePool{
		nodepool(dtesting.MakeNodePool("rack-a").Label("rack", "a")),
		nodepool(dtesting.MakeNodePool("rack-b").Label("rack", "b")),
	}
	runCases(t, map[string]tcase{
		"zone spread evens out": {
			pods: spreadPod("w").Replicas(6), claims: 3,
			check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2, fake.Zone3: 2}),
		},
		"zone spread counts running pods": {
			nodes: []simulator.Node{fullNode("n1", fake.Zone1, webPod("e1"), webPod("e2")), fullNode("n2", fake.Zone2, webPod("e3"))},
			pods:  spreadPod("w").Replicas(3), claims: -1,
			check: perZone("w-", map[string]int{fake.Zone2: 1, fake.Zone3: 2}),
		},
		"zone spread uses room on existing nodes": {
			nodes: []simulator.Node{existing("n1", fake.Zone1), existing("n2", fake.Zone2), existing("n3", fake.Zone3)},
			pods:  spreadPod("w").Replicas(3), claims: 0,
			check: perZone("w-", map[string]int{fake.Zone1: 1, fake.Zone2: 1, fake.Zone3: 1}),
		},
		"hostname spread with maxSkew 1 gives each pod a node": {
			pods: dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").HostnameSpread(1, web).Replicas(4), claims: 4,
		},
		"hostname spread with maxSkew 2 pairs pods": {
			pods: dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").HostnameSpread(2, web).Replicas(4), claims: 2,
		},
		"hostname spread counts pods on existing nodes": {
			nodes: []simulator.Node{existing("n", fake.Zone1, webPod("e"))},
			pods:  []*corev1.Pod{dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").HostnameSpread(1, web).Obj()}, claims: 1,
		},
		"ScheduleAnyway spread is honoured when it can be": {
			pods: spreadPod("w", dtesting.ScheduleAnyway()).Replicas(3), claims: 3,
			check: perZone("w-", map[string]int{fake.Zone1: 1, fake.Zone2: 1, fake.Zone3: 1}),
		},
		"ScheduleAnyway spread is relaxed when it cannot": {
			pods:   inZones(spreadPod("w", dtesting.ScheduleAnyway(), dtesting.NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore)), fake.Zone1).Replicas(3),
			claims: 1, check: perZone("w-", map[string]int{fake.Zone1: 3}),
		},
		"DoNotSchedule spread is not relaxed": {
			pods:   inZones(spreadPod("w", dtesting.NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore)), fake.Zone1).Replicas(3),
			claims: 1, unschedulable: map[string]string{"w-1": "topology spread on topology.kubernetes.io/zone (maxSkew 1)", "w-2": "topology spread"},
		},
		"nodeAffinityPolicy Honor measures only the pod's zones": {
			pods: inZones(spreadPod("w"), fake.Zone1, fake.Zone2).Replicas(4), claims: 2,
			check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2}),
		},
		"nodeAffinityPolicy Ignore measures every zone": {
			pods:   inZones(spreadPod("w", dtesting.NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore)), fake.Zone1, fake.Zone2).Replicas(4),
			claims: 2, unschedulable: map[string]string{"w-2": "topology spread", "w-3": "topology spread"},
		},
		"minDomains above the reachable zones caps each zone at maxSkew": {
			pods:   inZones(spreadPod("w", dtesting.MinDomains(3)), fake.Zone1, fake.Zone2).Replicas(3),
			claims: 2, unschedulable: map[string]string{"w-2": "minDomains 3"},
		},
		"minDomains met spreads normally": {
			pods: spreadPod("w", dtesting.MinDomains(2)).Replicas(6), claims: 3,
			check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2, fake.Zone3: 2}),
		},
		"nodeTaintsPolicy Ignore counts zones only a tainted pool offers": {
			pools: []simulator.NodePool{
				nodepool(dtesting.MakeNodePool("ab").Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1, fake.Zone2)),
				nodepool(dtesting.MakeNodePool("c").Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone3).Taint("reserved", "", corev1.TaintEffectNoSchedule)),
			},
			pods:   spreadPod("w").Replicas(3),
			claims: 2, unschedulable: map[string]string{"w-2": "topology spread"},
		},
		"nodeTaintsPolicy Honor leaves out zones the pod cannot tolerate": {
			pools: []simulator.NodePool{
				nodepool(dtesting.MakeNodePool("ab").Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1, fake.Zone2)),
				nodepool(dtesting.MakeNodePool("c").Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone3).Taint("reserved", "", corev1.TaintEffectNoSchedule)),
			},
			pods:   spreadPod("w", dtesting.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor)).Replicas(4),
			claims: 2, check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2}),
		},
		"nodeTaintsPolicy Honor without tolerations is not the same constraint as Ignore": {
			// The tainted node's web pods count for "other" (Ignore) but
			// not for the web pods (Honor, no toleration): zone-3 is empty
			// for them, so the third goes there, not to zone-1 or zone-2.
			nodes: []simulator.Node{dtesting.MakeNode("tainted").Zone(fake.Zone3).Alloc("cpu", "100m", "memory", "16Gi", "pods", "20").
				Taint("reserved", "", corev1.TaintEffectNoSchedule).Pod(webPod("e1"), webPod("e2")).Obj()},
			pods: append([]*corev1.Pod{dtesting.MakePod("other").Req("cpu", "1").ZoneSpread(1, web).Obj()},
				spreadPod("w", dtesting.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor)).Replicas(3)...),
			claims: -1, check: perZone("w-", map[string]int{fake.Zone1: 1, fake.Zone2: 1, fake.Zone3: 1}),
		},
		"a claim a spread's node filter may or may not count is decided first": {
			// Full on-demand nodes in every zone, web pods in the second
			// and third. "free" (two, pinned to the first zone) opens a claim
			// that could launch spot or on-demand, which the on-demand
			// pod's spread counts only if on-demand. Decided (spot, the
			// cheaper side), it leaves the first zone the emptiest
			// on-demand zone, and "od" (which shares no node with "free")
			// goes there.
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), ec2Types(t)...)},
			nodes: []simulator.Node{
				odNode("n1", "us-east-1a"), odNode("n2", "us-east-1b", webPod("e2")), odNode("n3", "us-east-1c", webPod("e3")),
			},
			pods: append(spreadPod("free").Label("role", "free").NodeSelector(zoneKey, "us-east-1a").Replicas(2),
				spreadPod("od").Req("cpu", "100m").NodeSelector(ctKey, "on-demand").PodAntiAffinity(hostKey, sel("role", "free")).Obj()),
			claims: 3, check: func(t *testing.T, r *result) {
				if got := r.zone("od"); got != "us-east-1a" {
					t.Errorf("od in %s, want us-east-1a", got)
				}
			},
		},
		"a filter on the hostname decides for new nodes": {
			// A new node's name is never "bad-node": each pod's own spread
			// counts the claims, so the minimum rises with them.
			pods: spreadPod("w").NodeAffinity(hostKey, corev1.NodeSelectorOpNotIn, "bad-node").Replicas(6), claims: 3,
			check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2, fake.Zone3: 2}),
		},
		"another pod's hostname filter leaves claims alone": {
			// "a"'s spread counts only node n1; no claim becomes n1, so
			// the b pods' claim is not narrowed to it and x, b1 and b2
			// share one node (their hostname spread allows three).
			nodes: []simulator.Node{dtesting.MakeNode("n1").Zone(fake.Zone1).Alloc("cpu", "200m", "memory", "16Gi", "pods", "20").Obj()},
			pods: []*corev1.Pod{
				dtesting.MakePod("a").Req("cpu", "100m").Label("app", "web").NodeSelector(hostKey, "n1").ZoneSpread(10, web).Obj(),
				dtesting.MakePod("x").Req("cpu", "600m").Label("role", "b").HostnameSpread(3, sel("role", "b")).Obj(),
				dtesting.MakePod("b1").Req("cpu", "400m").Label("role", "b").Label("app", "web").HostnameSpread(3, sel("role", "b")).Obj(),
				dtesting.MakePod("b2").Req("cpu", "400m").Label("role", "b").Label("app", "web").HostnameSpread(3, sel("role", "b")).Obj(),
			},
			claims: 1, placed: map[string]string{"a": "n1"}, together: [][]string{{"x", "b1", "b2"}},
		},
		"matchLabelKeys counts only the pod's own revision": {
			nodes: []simulator.Node{fullNode("old", fake.Zone1,
				dtesting.MakePod("e1").Label("app", "web").Label("rev", "1").Obj(),
				dtesting.MakePod("e2").Label("app", "web").Label("rev", "1").Obj())},
			pods:   spreadPod("w", dtesting.MatchLabelKeys("rev")).Label("rev", "2").Replicas(3),
			claims: 3, check: perZone("w-", map[string]int{fake.Zone1: 1, fake.Zone2: 1, fake.Zone3: 1}),
		},
		"a spread that does not select the pod only avoids crowded zones": {
			nodes: []simulator.Node{fullNode("n", fake.Zone1, webPod("e1"), webPod("e2"))},
			pods:  dtesting.MakePod("x").Req("cpu", "1").ZoneSpread(1, web).Replicas(3), claims: -1,
			check: func(t *testing.T, r *result) {
				if got := r.countBy("x-", r.zone)[fake.Zone1]; got != 0 {
					t.Errorf("%d pods in zone-1, want none", got)
				}
			},
		},
		"spread over capacity type": {
			pods: dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").Spread(v1.CapacityTypeLabelKey, 1, web).Replicas(4), claims: 2,
			check: func(t *testing.T, r *result) {
				if diff := cmp.Diff(map[string]int{"spot": 2, "on-demand": 2}, r.countBy("w-", func(p string) string { return r.label(p, ctKey) })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		"spread over a label the nodepools provide": {
			pools: racks,
			pods:  dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").Spread("rack", 1, web).Replicas(4), claims: 2,
			check: func(t *testing.T, r *result) {
				if diff := cmp.Diff(map[string]int{"a": 2, "b": 2}, r.countBy("w-", func(p string) string { return r.label(p, "rack") })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		"spread over a label no node can have": {
			pods:   []*corev1.Pod{dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").Spread("rack", 1, web).Obj()},
			claims: 0, unschedulable: map[string]string{"w": "topology spread on rack"},
		},
		"two spreads on different keys": {
			pods: dtesting.MakePod("w").Req("cpu", "1").Label("app", "web").ZoneSpread(1, web).HostnameSpread(1, web).Replicas(6), claims: 6,
			check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2, fake.Zone3: 2}),
		},
	})
}
