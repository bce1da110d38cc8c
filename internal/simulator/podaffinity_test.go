package simulator_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// zonesOf asserts the zones of the named pods.
func zonesOf(want map[string]string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		for pod, z := range want {
			if got := r.zone(pod); got != z {
				t.Errorf("pod %s in zone %q, want %q", pod, got, z)
			}
		}
	}
}

// distinctZones asserts the named pods are in pairwise different, decided zones.
func distinctZones(pods ...string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		seen := map[string]string{}
		for _, p := range pods {
			z := r.zone(p)
			if z == "" {
				t.Errorf("pod %s has no decided zone", p)
			}
			if other, ok := seen[z]; ok {
				t.Errorf("pods %s and %s share zone %s", other, p, z)
			}
			seen[z] = p
		}
	}
}

func existing(name, zone string, pods ...*corev1.Pod) simulator.Node {
	return dtesting.MakeNode(name).Zone(zone).Alloc("cpu", "4", "memory", "16Gi", "pods", "20").Pod(pods...).Obj()
}

func fullNode(name, zone string, pods ...*corev1.Pod) simulator.Node {
	return dtesting.MakeNode(name).Zone(zone).Alloc("cpu", "100m", "memory", "16Gi", "pods", "20").Pod(pods...).Obj()
}

func TestPodAffinity(t *testing.T) {
	web := sel("app", "web")
	db := sel("app", "db")
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "500m") }
	dbPod := func(name string) *corev1.Pod { return dtesting.MakePod(name).Label("app", "db").Obj() }
	runCases(t, map[string]tcase{
		"required hostname anti-affinity gives each replica a node": {
			pods: pod("w").Label("app", "web").PodAntiAffinity(hostKey, web).Replicas(3), claims: 3, apart: [][]string{names("w", 3)},
		},
		"required zone anti-affinity: one per zone, the fourth cannot go": {
			pods:   pod("w").Label("app", "web").PodAntiAffinity(zoneKey, web).Replicas(4),
			claims: 3, check: distinctZones("w-0", "w-1", "w-2"),
			unschedulable: map[string]string{"w-3": "pod anti-affinity on topology.kubernetes.io/zone"},
		},
		"affinity to an existing pod's node": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dbPod("db"))},
			pods:  []*corev1.Pod{pod("w").PodAffinity(hostKey, db).Obj()}, claims: 0, placed: map[string]string{"w": "n"},
		},
		"affinity to an existing pod's zone when its node is full": {
			nodes: []simulator.Node{fullNode("n", fake.Zone2, dbPod("db"))},
			pods:  []*corev1.Pod{pod("w").PodAffinity(zoneKey, db).Obj()}, claims: 1, check: zonesOf(map[string]string{"w": fake.Zone2}),
		},
		"affinity to a pending pod on the same node": {
			pods: []*corev1.Pod{
				dtesting.MakePod("w").Req("cpu", "1").PodAffinity(hostKey, db).Obj(),
				dtesting.MakePod("d").Req("cpu", "100m").Label("app", "db").Obj(),
			},
			claims: 1, together: [][]string{{"w", "d"}},
		},
		"affinity to pending pods in the same zone": {
			pods: append(dtesting.MakePod("w").Req("cpu", "1").PodAffinity(zoneKey, db).Replicas(2),
				dtesting.MakePod("d").Req("cpu", "100m").Label("app", "db").NodeSelector(zoneKey, fake.Zone3).Obj()),
			claims: -1, check: zonesOf(map[string]string{"w-0": fake.Zone3, "w-1": fake.Zone3, "d": fake.Zone3}),
		},
		"self affinity keeps a group in one zone": {
			pods:   pod("s").Label("app", "web").PodAffinity(zoneKey, web).Req("cpu", "3").Replicas(4),
			claims: -1,
			check: func(t *testing.T, r *result) {
				if zones := r.countBy("s-", r.zone); len(zones) != 1 || zones[""] != 0 {
					t.Errorf("zones %v, want all four in one decided zone", zones)
				}
			},
		},
		"affinity with no matching pod anywhere": {
			pods: []*corev1.Pod{pod("w").PodAffinity(zoneKey, sel("app", "missing")).Obj()}, claims: 0,
			unschedulable: map[string]string{"w": "pod affinity on topology.kubernetes.io/zone"},
		},
		"existing pod's anti-affinity repels a new pod from its node": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dtesting.MakePod("guard").PodAntiAffinity(hostKey, web).Obj())},
			pods:  []*corev1.Pod{pod("w").Label("app", "web").Obj()}, claims: 1,
		},
		"existing pod's zone anti-affinity repels a new pod from its zone": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dtesting.MakePod("guard").PodAntiAffinity(zoneKey, web).Obj())},
			pods:  []*corev1.Pod{pod("w").Label("app", "web").Obj()}, claims: 1,
			check: func(t *testing.T, r *result) {
				if z := r.zone("w"); z == fake.Zone1 || z == "" {
					t.Errorf("pod w in zone %q, want a decided zone other than zone-1", z)
				}
			},
		},
		"new pod's anti-affinity keeps it off an existing pod's node": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dbPod("db"))},
			pods:  []*corev1.Pod{pod("w").PodAntiAffinity(hostKey, db).Obj()}, claims: 1,
		},
		"anti-affinity applies to pods placed later (inverse)": {
			pods: []*corev1.Pod{
				dtesting.MakePod("guard").Req("cpu", "2").Label("app", "guard").PodAntiAffinity(hostKey, web).Obj(),
				dtesting.MakePod("w").Req("cpu", "100m").Label("app", "web").Obj(),
			},
			claims: 2, apart: [][]string{{"guard", "w"}},
		},
		"affinity term counts only its own namespace by default": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dtesting.MakePod("db").Namespace("other").Label("app", "db").Obj())},
			pods:  []*corev1.Pod{pod("w").PodAffinity(hostKey, db).Obj()}, claims: 0,
			unschedulable: map[string]string{"w": "pod affinity"},
		},
		"affinity term with explicit namespaces": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dtesting.MakePod("db").Namespace("other").Label("app", "db").Obj())},
			pods:  []*corev1.Pod{pod("w").PodAffinity(hostKey, db, dtesting.InNamespaces("other")).Obj()}, claims: 0, placed: map[string]string{"w": "n"},
		},
		"affinity term with a namespace selector": {
			namespaces: []*corev1.Namespace{dtesting.MakeNamespace("other", sel("team", "x")), dtesting.MakeNamespace("default", nil)},
			nodes:      []simulator.Node{existing("n", fake.Zone1, dtesting.MakePod("db").Namespace("other").Label("app", "db").Obj())},
			pods:       []*corev1.Pod{pod("w").PodAffinity(hostKey, db, dtesting.NamespaceSelector(sel("team", "x"))).Obj()}, claims: 0, placed: map[string]string{"w": "n"},
		},
		"affinity term with an empty namespace selector counts every namespace": {
			nodes: []simulator.Node{existing("n", fake.Zone1, dtesting.MakePod("db").Namespace("other").Label("app", "db").Obj())},
			pods:  []*corev1.Pod{pod("w").PodAffinity(hostKey, db, dtesting.NamespaceSelector(nil)).Obj()}, claims: 0, placed: map[string]string{"w": "n"},
		},
		"preferred hostname anti-affinity is honoured": {
			pods: pod("w").Label("app", "web").PreferredPodAntiAffinity(1, hostKey, web).Replicas(3), claims: 3, apart: [][]string{names("w", 3)},
		},
		"preferred hostname anti-affinity is ignored under Ignore": {
			opts: simulator.Options{PreferencePolicy: simulator.PreferencesIgnore},
			pods: pod("w").Label("app", "web").PreferredPodAntiAffinity(1, hostKey, web).Replicas(3), claims: 1,
		},
		"preferred affinity to a missing pod is relaxed": {
			pods: []*corev1.Pod{pod("w").PreferredPodAffinity(50, zoneKey, sel("app", "missing")).Obj()}, claims: 1,
		},
		"preferred zone anti-affinity: three zones, then relaxed": {
			pods:   pod("w").Label("app", "web").PreferredPodAntiAffinity(10, zoneKey, web).Replicas(5),
			claims: 3, check: distinctZones("w-0", "w-1", "w-2"),
		},
		"anti-affinity to pods scheduled earlier in the same solve": {
			pods: []*corev1.Pod{
				dtesting.MakePod("d").Req("cpu", "2").Label("app", "db").Obj(),
				dtesting.MakePod("w").Req("cpu", "100m").PodAntiAffinity(hostKey, db).Obj(),
			},
			claims: 2, apart: [][]string{{"d", "w"}},
		},
		"pods on a node being deleted do not count": {
			nodes: []simulator.Node{dtesting.MakeNode("old").Zone(fake.Zone1).Alloc("cpu", "4", "pods", "20").Deleting().Pod(dbPod("db")).Obj()},
			pods:  []*corev1.Pod{pod("w").PodAntiAffinity(zoneKey, db).Obj()}, claims: 1,
			check: zonesOf(map[string]string{"w": fake.Zone1}),
		},
	})
}
