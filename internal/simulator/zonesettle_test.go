package simulator_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// TestZoneSettling covers where claims settle their zone. Every case is also
// replayed in order by verifyPlan (checkFidelity), which fails a plan whose
// zonal spread or affinity breaks when a pod binds, or that leaves a claim
// free to launch in any zone while it holds a pod a zonal group counts.
func TestZoneSettling(t *testing.T) {
	web := sel("app", "web")
	plain := func(name string) *dtesting.PodWrapper {
		return dtesting.MakePod(name).Req("cpu", "100m").Label("app", "web")
	}
	spread := func(name string) *dtesting.PodWrapper {
		return plain(name).ZoneSpread(1, web)
	}
	// own gives each pod a node of its own, so that nothing else settles
	// its claim's zone.
	own := func(p *dtesting.PodWrapper) *dtesting.PodWrapper {
		return p.Label("own", "yes").PodAntiAffinity(corev1.LabelHostname, sel("own", "yes"))
	}
	sameZoneAs := func(a, b string, want bool) func(*testing.T, *result) {
		return func(t *testing.T, r *result) {
			t.Helper()
			if za, zb := r.zone(a), r.zone(b); (za == zb) != want || za == "" {
				t.Errorf("%s in %q, %s in %q, want same zone %v", a, za, b, zb, want)
			}
		}
	}
	runCases(t, map[string]tcase{
		// Before the fix the spread pod pinned the claim to zone-1 with its
		// two web pods uncounted, so zone-1 went to 3 against 0 elsewhere.
		"zone spread counts the pods already on the claim": {
			pods:   []*corev1.Pod{plain("p1").Obj(), plain("p2").Obj(), spread("s1").Obj()},
			claims: 2, together: [][]string{{"p1", "p2"}}, check: sameZoneAs("p1", "s1", false),
		},
		"a claim holding a pod a zonal spread counts gets a zone": {
			pods:   []*corev1.Pod{own(plain("p1")).Obj(), own(spread("s1")).Obj()},
			claims: -1, check: func(t *testing.T, r *result) {
				t.Helper()
				if z := r.zone("p1"); z == "" {
					t.Errorf("p1's claim has no zone:\n%s", dump(r.plan))
				}
			},
		},
		"pods a zonal spread counts are balanced over the zones": {
			pods:   append(own(plain("w")).Replicas(6), spread("s1").Obj()),
			claims: -1, check: perZone("w-", map[string]int{fake.Zone1: 2, fake.Zone2: 2, fake.Zone3: 2}),
		},
		"zonal self-affinity groups on nodes of their own go to different zones": {
			pods: slices.Concat(
				own(dtesting.MakePod("a").Req("cpu", "1").Label("g", "a").PodAffinity(zoneKey, sel("g", "a"))).Replicas(2),
				own(dtesting.MakePod("b").Req("cpu", "1").Label("g", "b").PodAffinity(zoneKey, sel("g", "b"))).Replicas(2),
				own(dtesting.MakePod("c").Req("cpu", "1").Label("g", "c").PodAffinity(zoneKey, sel("g", "c"))).Replicas(2),
			),
			claims: -1, check: func(t *testing.T, r *result) {
				t.Helper()
				zones := map[string]bool{r.zone("a-0"): true, r.zone("b-0"): true, r.zone("c-0"): true}
				if len(zones) != 3 {
					t.Errorf("groups in zones %v, want three different zones", zones)
				}
			},
		},
	})
}

// TestAffinityGroupExistsAnywhere: as in the kube-scheduler, a pod may start
// its zonal self-affinity group only when no pod of the group runs in any
// zone, not merely in the zones it may use (found by TestPlanProperties).
func TestAffinityGroupExistsAnywhere(t *testing.T) {
	member := func(name string) *dtesting.PodWrapper {
		return dtesting.MakePod(name).Req("cpu", "1").Label("g", "a").PodAffinity(zoneKey, sel("g", "a"))
	}
	runCases(t, map[string]tcase{
		"a group running only in zones the pod excludes leaves it pending": {
			nodes:         []simulator.Node{existing("n3", fake.Zone3, member("e").Obj())},
			pods:          []*corev1.Pod{member("p").NodeAffinity(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1).Obj()},
			claims:        0,
			unschedulable: map[string]string{"p": ""},
		},
		"a group placed earlier in the solve in an excluded zone leaves the pod pending": {
			pods: []*corev1.Pod{
				member("p1").NodeAffinity(zoneKey, corev1.NodeSelectorOpIn, fake.Zone3).Obj(),
				member("p2").NodeAffinity(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1).Obj(),
			},
			claims:        1,
			unschedulable: map[string]string{"p2": ""},
		},
		// Found by the kube-scheduler oracle on TestPlanProperties: the pod
		// may start its hostname group only if no pod matches any of its
		// affinity terms, and its zone term selects other pods, which run.
		"a pod with a second affinity term on other pods cannot start its own group": {
			pods: []*corev1.Pod{
				dtesting.MakePod("b").Req("cpu", "1").Label("app", "b").Obj(),
				dtesting.MakePod("p").Req("cpu", "1").Label("app", "a").
					PodAffinity(hostKey, sel("app", "a")).PodAffinity(zoneKey, sel("app", "b")).Obj(),
			},
			claims:        1,
			unschedulable: map[string]string{"p": ""},
		},
		// The kube-scheduler counts only pods matching every term: an app=a
		// pod next to p does not help while no pod is both app=a and app=b.
		"pods that match only one of two affinity terms do not count": {
			pods: []*corev1.Pod{
				dtesting.MakePod("b").Req("cpu", "1").Label("app", "b").Obj(),
				dtesting.MakePod("a").Req("cpu", "1").Label("app", "a").Obj(),
				dtesting.MakePod("p").Req("cpu", "1").Label("app", "a").
					PodAffinity(hostKey, sel("app", "a")).PodAffinity(zoneKey, sel("app", "b")).Obj(),
			},
			claims:        -1,
			unschedulable: map[string]string{"p": ""},
		},
		"a pod matching both terms satisfies both": {
			pods: []*corev1.Pod{
				dtesting.MakePod("ab").Req("cpu", "1").Label("app", "a").Label("tier", "b").Obj(),
				dtesting.MakePod("p").Req("cpu", "1").Label("app", "a").
					PodAffinity(hostKey, sel("app", "a")).PodAffinity(zoneKey, sel("tier", "b")).Obj(),
			},
			claims: 1, together: [][]string{{"ab", "p"}},
		},
	})
}
