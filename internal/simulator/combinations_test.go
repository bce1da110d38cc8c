package simulator_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// hardAntiAffinityHolds checks every required pod anti-affinity term in the
// plan: no two pods it concerns share a location (hostname) or a decided zone.
func hardAntiAffinityHolds(t *testing.T, r *result) {
	t.Helper()
	var pods []*corev1.Pod
	for _, p := range r.plan.Placements {
		pods = append(pods, p.Pod)
	}
	for _, c := range r.plan.NewNodeClaims {
		pods = append(pods, c.Pods...)
	}
	moving := map[*corev1.Pod]bool{}
	for _, p := range r.req.Pods {
		moving[p] = true
	}
	for _, n := range r.snap.Nodes {
		if n.MarkedForDeletion || slices.Contains(r.req.RemoveNodes, n.Name) {
			continue
		}
		for _, p := range n.Pods {
			if !moving[p] {
				pods = append(pods, p)
			}
		}
	}
	where := func(p *corev1.Pod, key string) string {
		if l, ok := r.loc[p.Name]; ok {
			if key == hostKey {
				return l
			}
			return r.label(p.Name, key)
		}
		for _, n := range r.snap.Nodes {
			if n.Name == p.Spec.NodeName {
				if key == hostKey {
					return "node/" + n.Name
				}
				return n.Labels[key]
			}
		}
		return ""
	}
	for _, p := range pods {
		if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		for _, term := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			sel := labels.SelectorFromSet(term.LabelSelector.MatchLabels)
			mine := where(p, term.TopologyKey)
			if mine == "" {
				continue
			}
			_, placedP := r.loc[p.Name]
			for _, q := range pods {
				if _, placedQ := r.loc[q.Name]; !placedP && !placedQ {
					continue // both were already running: not the plan's doing
				}
				if q != p && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) && where(q, term.TopologyKey) == mine {
					t.Errorf("pods %s and %s share %s %s despite %s's anti-affinity", p.Name, q.Name, term.TopologyKey, mine, p.Name)
				}
			}
		}
	}
}

func TestCombinations(t *testing.T) {
	web := sel("app", "web")
	db := sel("app", "db")
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	twoZones := nodepool(dtesting.MakeNodePool("ab").Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1, fake.Zone2))
	agent := dtesting.MakeDaemonSet("agent", dtesting.MakePod("x").Req("cpu", "1"))
	gp3 := "gp3"
	runCases(t, map[string]tcase{
		"zone spread with hostname anti-affinity": {
			pods:   pod("w").Label("app", "web").ZoneSpread(1, web).PodAntiAffinity(hostKey, web).Replicas(6),
			claims: 6, check: checks(perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2, fake.Zone3: 2}), hardAntiAffinityHolds),
		},
		"zone spread with minDomains over a two-zone nodepool": {
			pools: []simulator.NodePool{twoZones},
			pods:  pod("w").Label("app", "web").ZoneSpread(1, web, dtesting.MinDomains(3)).Replicas(3), claims: 2,
			unschedulable: map[string]string{"w-2": "minDomains 3"},
		},
		"hostname affinity to pending pods that spread across zones": {
			pods: append(
				pod("db").Req("cpu", "2").Label("app", "db").ZoneSpread(1, db).Replicas(3),
				pod("web").Label("app", "web").PodAffinity(hostKey, db).PodAntiAffinity(hostKey, web).Replicas(3)...),
			claims: 3,
			check: func(t *testing.T, r *result) {
				dbs := map[string]bool{}
				for _, n := range names("db", 3) {
					dbs[r.loc[n]] = true
				}
				for _, n := range names("web", 3) {
					if !dbs[r.loc[n]] {
						t.Errorf("%s at %s has no db pod", n, r.loc[n])
					}
				}
				hardAntiAffinityHolds(t, r)
			},
		},
		"zonal volumes against zone anti-affinity": {
			pvs:  []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-0", fake.Zone1), dtesting.MakeZonalPV("pv-1", fake.Zone1)},
			pvcs: []*corev1.PersistentVolumeClaim{dtesting.MakePVC("data-0", "pv-0", &gp3), dtesting.MakePVC("data-1", "pv-1", &gp3)},
			pods: []*corev1.Pod{
				pod("db-0").Label("app", "db").PodAntiAffinity(zoneKey, db).PVC("data-0").Obj(),
				pod("db-1").Label("app", "db").PodAntiAffinity(zoneKey, db).PVC("data-1").Obj(),
			},
			claims: 1, unschedulable: map[string]string{"db-1": "pod anti-affinity"},
		},
		"daemonsets count against limits": {
			pools:      []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").Limit("cpu", "4"))},
			daemonsets: []*appsv1.DaemonSet{agent.Obj()},
			pods:       pod("a").Label("app", "a").PodAntiAffinity(hostKey, sel("app", "a")).Replicas(2), claims: 1,
			unschedulable: map[string]string{"a-1": "limits reached"},
		},
		"existing pod's anti-affinity and a zone spread": {
			nodes:  []simulator.Node{fullNode("n", fake.Zone1, dtesting.MakePod("guard").PodAntiAffinity(zoneKey, web).Obj())},
			pods:   pod("w").Label("app", "web").ZoneSpread(1, web).Replicas(2),
			claims: 2, check: perZone("w-", map[string]int{fake.Zone2: 1, fake.Zone3: 1}),
		},
		"hard zone anti-affinity with a soft hostname one": {
			pods:   pod("w").Label("app", "web").PodAntiAffinity(zoneKey, web).PreferredPodAntiAffinity(1, hostKey, web).Replicas(3),
			claims: 3, check: distinctZones("w-0", "w-1", "w-2"),
		},
		"existing room, spread and new nodes together": {
			nodes:  []simulator.Node{roomy("n").Alloc("cpu", "1", "memory", "4Gi", "pods", "10").Obj()},
			pods:   pod("w").Req("cpu", "900m").Label("app", "web").ZoneSpread(1, web).Replicas(3),
			claims: 2, check: perZone("w-", map[string]int{fake.Zone1: 1, fake.Zone2: 1, fake.Zone3: 1}),
		},
		"tainted two-zone pool and plain pool under one spread": {
			pools: []simulator.NodePool{
				nodepool(dtesting.MakeNodePool("dedicated").Weight(50).Taint("team", "a", corev1.TaintEffectNoSchedule).Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1, fake.Zone2)),
				nodepool(dtesting.MakeNodePool("general")),
			},
			pods:   pod("w").Label("app", "web").Toleration("team", corev1.TolerationOpEqual, "a", corev1.TaintEffectNoSchedule).ZoneSpread(1, web).Replicas(3),
			claims: 3,
			check: checks(perZone("w-", map[string]int{fake.Zone1: 1, fake.Zone2: 1, fake.Zone3: 1}), func(t *testing.T, r *result) {
				for _, n := range names("w", 3) {
					want := "dedicated"
					if r.zone(n) == fake.Zone3 {
						want = "general"
					}
					if got := r.claimOf(n).NodePool; got != want {
						t.Errorf("%s in %s on nodepool %s, want %s", n, r.zone(n), got, want)
					}
				}
			}),
		},
		"the reference mix, small": {
			pools:  []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), fakeTypes(400)...)},
			pods:   karpenterMixPods(100),
			claims: 20,
			check: func(t *testing.T, r *result) {
				hardAntiAffinityHolds(t, r)
				groups := map[string]map[string]bool{}
				for _, c := range r.plan.NewNodeClaims {
					for _, p := range c.Pods {
						if g, ok := p.Labels["my-affinity"]; ok {
							if groups[g] == nil {
								groups[g] = map[string]bool{}
							}
							groups[g][r.zone(p.Name)] = true
						}
					}
				}
				for g, zones := range groups {
					if len(zones) != 1 || zones[""] {
						t.Errorf("affinity group %s spans zones %v", g, zones)
					}
				}
			},
		},
		"reasons name every nodepool": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("a").Taint("x", "", corev1.TaintEffectNoSchedule)), nodepool(dtesting.MakeNodePool("b"))},
			pods:  []*corev1.Pod{pod("p").Req("cpu", "100").Obj()}, claims: 0,
			check: func(t *testing.T, r *result) {
				reason := r.plan.Unschedulable[0].Reason
				if !strings.Contains(reason, "nodepool a: untolerated taint x:NoSchedule") || !strings.Contains(reason, "nodepool b: no instance type has room") {
					t.Errorf("reason %q", reason)
				}
			},
			unschedulable: map[string]string{"p": ""},
		},
	})
}
