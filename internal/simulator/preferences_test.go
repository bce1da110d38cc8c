package simulator_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

func TestPreferences(t *testing.T) {
	web := sel("app", "web")
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	prefZone := func(p *dtesting.PodWrapper, w int32, zone string) *dtesting.PodWrapper {
		return p.PreferredNodeAffinity(w, zoneKey, corev1.NodeSelectorOpIn, zone)
	}
	ignore := simulator.Options{PreferencePolicy: simulator.PreferencesIgnore}
	soft := nodepool(dtesting.MakeNodePool("soft").Weight(50).Taint("spare", "", corev1.TaintEffectPreferNoSchedule))
	plain := nodepool(dtesting.MakeNodePool("plain").Weight(10))
	runCases(t, map[string]tcase{
		"preferred node affinity is honoured": {
			pods: []*corev1.Pod{prefZone(pod("p"), 1, fake.Zone2).Obj()}, claims: 1, check: zonesOf(map[string]string{"p": fake.Zone2}),
		},
		"impossible preferred node affinity is relaxed": {
			pods: []*corev1.Pod{prefZone(pod("p"), 1, "zone-9").Obj()}, claims: 1,
		},
		"the heaviest preferred node affinity wins": {
			pods: []*corev1.Pod{prefZone(prefZone(pod("p"), 1, fake.Zone1), 50, fake.Zone2).Obj()}, claims: 1,
			check: zonesOf(map[string]string{"p": fake.Zone2}),
		},
		"the next preferred node affinity is tried after the heaviest": {
			pods: []*corev1.Pod{prefZone(prefZone(pod("p"), 50, "zone-9"), 10, fake.Zone3).Obj()}, claims: 1,
			check: zonesOf(map[string]string{"p": fake.Zone3}),
		},
		"preferred node affinity is dropped under Ignore": {
			opts: ignore, pods: []*corev1.Pod{prefZone(pod("p"), 1, fake.Zone2).Obj()}, claims: 1,
			check: zonesOf(map[string]string{"p": ""}),
		},
		"pod affinity is relaxed before node affinity": {
			pods:   []*corev1.Pod{prefZone(pod("p").PreferredPodAffinity(100, zoneKey, sel("app", "missing")), 1, fake.Zone2).Obj()},
			claims: 1, check: zonesOf(map[string]string{"p": fake.Zone2}),
		},
		"pod anti-affinity is relaxed before node affinity": {
			pods:   prefZone(pod("w").Label("app", "web").PreferredPodAntiAffinity(10, zoneKey, web), 1, fake.Zone1).Replicas(2),
			claims: 1, check: zonesOf(map[string]string{"w-0": fake.Zone1, "w-1": fake.Zone1}),
		},
		"the heaviest pod anti-affinity is relaxed first": {
			// As in the reference preferences workload: zone anti-affinity
			// (10) cannot hold past three pods, hostname anti-affinity (1) can.
			pods:   pod("w").Label("app", "web").PreferredPodAntiAffinity(10, zoneKey, web).PreferredPodAntiAffinity(1, hostKey, web).Replicas(5),
			claims: 5, apart: [][]string{names("w", 5)},
		},
		"spreads are relaxed after node affinity": {
			pods:   prefZone(pod("w").Label("app", "web").ZoneSpread(1, web, dtesting.ScheduleAnyway()), 1, "zone-9").Replicas(3),
			claims: 3, check: distinctZones("w-0", "w-1", "w-2"),
		},
		"PreferNoSchedule pools are avoided while another can take the pod": {
			pools: []simulator.NodePool{soft, plain}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
			check: poolsOf(map[string]string{"p": "plain"}),
		},
		"PreferNoSchedule is relaxed when nothing else fits": {
			pools: []simulator.NodePool{soft}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"PreferNoSchedule is ignored under Ignore": {
			opts: ignore, pools: []simulator.NodePool{soft, plain}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
			check: poolsOf(map[string]string{"p": "soft"}),
		},
		"PreferNoSchedule on an existing node": {
			nodes: []simulator.Node{roomy("n").Taint("spare", "", corev1.TaintEffectPreferNoSchedule).Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"PreferNoSchedule on an existing node under Ignore": {
			opts:  ignore,
			nodes: []simulator.Node{roomy("n").Taint("spare", "", corev1.TaintEffectPreferNoSchedule).Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
		"a tolerated PreferNoSchedule taint is no obstacle": {
			pools: []simulator.NodePool{soft, plain}, pods: []*corev1.Pod{pod("p").Toleration("spare", corev1.TolerationOpExists, "", "").Obj()},
			claims: 1, check: poolsOf(map[string]string{"p": "soft"}),
		},
		"the reason lists what was relaxed": {
			pods: []*corev1.Pod{prefZone(pod("p").NodeSelector("team", "x"), 1, fake.Zone2).Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "(after relaxing preferred node affinity (weight 1))"},
		},
		"the preferences workload in small": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), fakeTypes(50)...)},
			pods:  preferencePods(12), claims: 12,
			check: func(t *testing.T, r *result) {
				if zones := r.countBy("pod-", r.zone); zones[fake.Zone1] != 12 {
					t.Errorf("zones %v, want all twelve in zone-1", zones)
				}
			},
		},
		"the preferences workload in small, ignored": {
			opts:  ignore,
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), fakeTypes(50)...)},
			pods:  preferencePods(12), claims: 1,
		},
	})
}
