package simulator_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// randomMix draws a workload in the shape of karpenter-mix but with every
// choice random: 20 to 300 pods, each labelled my-label=a..d and given at
// most one of a zonal spread (maxSkew 1 or 2, on a random my-label), a
// hostname spread, a zonal self-affinity (my-affinity=x..z), a hostname
// anti-affinity, or nothing; a third of them restricted to one or two zones;
// one or two NodePools (the second limited to zone-1 and zone-2); and up to
// three existing nodes holding my-label pods.
func randomMix(rng *rand.Rand) *simulator.Snapshot {
	zones := []string{fake.Zone1, fake.Zone2, fake.Zone3}
	of := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	snap := &simulator.Snapshot{NodePools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), fakeTypes(40)...)}}
	if rng.IntN(2) == 0 {
		snap.NodePools = append(snap.NodePools, nodepool(dtesting.MakeNodePool("two-zones").Weight(10).
			Req(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1, fake.Zone2), fakeTypes(40)...))
	}
	for i := range rng.IntN(4) {
		n := dtesting.MakeNode(fmt.Sprintf("node-%d", i)).Zone(zones[rng.IntN(3)]).NodePool("default").
			Alloc("cpu", "8", "memory", "32Gi", "pods", "110")
		for j := range rng.IntN(4) {
			n.Pod(dtesting.MakePod(fmt.Sprintf("bound-%d-%d", i, j)).Req("cpu", "500m").Label("my-label", of("a", "b", "c", "d")).Obj())
		}
		snap.Nodes = append(snap.Nodes, n.Obj())
	}
	for i := range 20 + rng.IntN(281) {
		p := dtesting.MakePod(fmt.Sprintf("pod-%03d", i)).
			Req("cpu", of("100m", "250m", "500m", "1", "1500m")).Req("memory", of("100Mi", "512Mi", "1Gi", "4Gi")).
			Label("my-label", of("a", "b", "c", "d"))
		switch rng.IntN(6) {
		case 0:
			p.ZoneSpread(int32(1+rng.IntN(2)), sel("my-label", of("a", "b", "c", "d")))
		case 1:
			p.HostnameSpread(1, sel("my-label", of("a", "b", "c", "d")))
		case 2:
			v := of("x", "y", "z")
			p.Label("my-affinity", v).PodAffinity(zoneKey, sel("my-affinity", v))
		case 3:
			p.Label("app", "nginx").PodAntiAffinity(hostKey, sel("app", "nginx"))
		}
		if rng.IntN(3) == 0 {
			z := rng.Perm(3)
			p.NodeAffinity(zoneKey, corev1.NodeSelectorOpIn, zones[z[0]], zones[z[rng.IntN(2)]])
		}
		snap.Pods = append(snap.Pods, p.Obj())
	}
	return snap
}

// randomZonalMix draws workloads where small zonal pods (zone spreads
// only, counted only by zone spreads) share EC2 NodePools with large
// generic pods and a few others, so that claims made only for zonal pods
// can be emptied into the room the generic pods' claims leave
// (emptyZonalClaims): 20 to 200 pods, 40% in three spread groups (app=z0..z2,
// maxSkew 1 or 2), 50% generic, 10% pinned to a zone or capacity type or
// with hostname anti-affinity; a second NodePool (weight 10, tainted, for
// the pods that tolerate it) half the time, and a cpu limit on the default
// pool a third of the time. A quarter of the spread pods select a capacity
// type their spread's filter then honours (nodeAffinityPolicy Honor),
// another quarter honour taints (nodeTaintsPolicy Honor), so one group's
// pods differ in which nodes their spreads count.
func randomZonalMix(rng *rand.Rand, types []*cloudprovider.InstanceType) *simulator.Snapshot {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	of := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	def := dtesting.MakeNodePool("default").Req(catalog.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r")
	if rng.IntN(3) == 0 {
		def.Limit("cpu", fmt.Sprint(200+rng.IntN(400)))
	}
	snap := &simulator.Snapshot{NodePools: []simulator.NodePool{nodepool(def, types...)}}
	tainted := rng.IntN(2) == 0
	if tainted {
		snap.NodePools = append(snap.NodePools, nodepool(dtesting.MakeNodePool("dedicated").Weight(10).
			Req(catalog.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m").
			Taint("dedicated", "x", corev1.TaintEffectNoSchedule), types...))
	}
	for i := range 20 + rng.IntN(181) {
		// Zonal pods small, the others large: the generic pods' claims
		// then end with room the zonal pods fit, and the zonal pods'
		// claims with room no generic pod fits.
		p := dtesting.MakePod(fmt.Sprintf("pod-%03d", i)).
			Req("cpu", of("1", "1500m", "2", "3")).Req("memory", of("1Gi", "4Gi", "8Gi"))
		switch k := rng.IntN(10); {
		case k < 4:
			p.Req("cpu", of("100m", "250m", "500m")).Req("memory", of("100Mi", "512Mi", "1Gi"))
			app := of("z0", "z1", "z2")
			var opts []dtesting.SpreadOption
			switch rng.IntN(4) {
			case 0:
				// The spread counts only nodes of the pod's capacity type;
				// the group's other pods may land on claims of either.
				p.NodeSelector(ctKey, of("on-demand", "spot"))
				opts = append(opts, dtesting.NodeAffinityPolicy(corev1.NodeInclusionPolicyHonor))
			case 1:
				// The spread leaves out the nodes of taints the pod does not
				// tolerate (the dedicated pool's, unless it tolerates them).
				opts = append(opts, dtesting.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor))
			}
			p.Label("app", app).ZoneSpread(int32(1+rng.IntN(2)), sel("app", app), opts...)
		case k < 9:
		case rng.IntN(2) == 0:
			if rng.IntN(2) == 0 {
				p.NodeSelector(zoneKey, zones[rng.IntN(3)])
			} else {
				p.NodeSelector(ctKey, of("on-demand", "spot"))
			}
		default:
			p.Label("app", "nginx").PodAntiAffinity(hostKey, sel("app", "nginx"))
		}
		if tainted && rng.IntN(3) == 0 {
			p.Toleration("dedicated", corev1.TolerationOpEqual, "x", corev1.TaintEffectNoSchedule)
		}
		snap.Pods = append(snap.Pods, p.Obj())
	}
	return snap
}

// randomFilterMix draws workloads where the pods of one spread selector
// (app=z0..z2) differ in the nodes their spreads count: 20 to 200 pods,
// each selecting a capacity type, an instance category, both or neither
// (nodeAffinityPolicy Honor, the default, makes that its spread's filter),
// a third honouring taints, a quarter tolerating the tainted pool offered
// half the time; two thirds spread over zones or hostnames.
func randomFilterMix(rng *rand.Rand, types []*cloudprovider.InstanceType) *simulator.Snapshot {
	of := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	def := dtesting.MakeNodePool("default").Req(catalog.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r")
	snap := &simulator.Snapshot{NodePools: []simulator.NodePool{nodepool(def, types...)}}
	if rng.IntN(2) == 0 {
		snap.NodePools = append(snap.NodePools, nodepool(dtesting.MakeNodePool("dedicated").Weight(10).
			Req(catalog.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m").
			Taint("dedicated", "x", corev1.TaintEffectNoSchedule), types...))
	}
	for i := range 20 + rng.IntN(181) {
		app := of("z0", "z1", "z2")
		p := dtesting.MakePod(fmt.Sprintf("pod-%03d", i)).Label("app", app).
			Req("cpu", of("100m", "250m", "500m", "1", "2")).Req("memory", of("100Mi", "1Gi", "4Gi"))
		switch rng.IntN(4) {
		case 0:
			p.NodeSelector(ctKey, of("on-demand", "spot"))
		case 1:
			p.NodeSelector(catalog.LabelInstanceCategory, of("c", "m", "r"))
		case 2:
			p.NodeSelector(ctKey, of("on-demand", "spot")).NodeSelector(catalog.LabelInstanceCategory, of("c", "m"))
		}
		var opts []dtesting.SpreadOption
		if rng.IntN(3) == 0 {
			opts = append(opts, dtesting.NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor))
		}
		if rng.IntN(4) == 0 {
			p.Toleration("dedicated", corev1.TolerationOpEqual, "x", corev1.TaintEffectNoSchedule)
		}
		switch rng.IntN(3) {
		case 0:
			p.ZoneSpread(int32(1+rng.IntN(2)), sel("app", app), opts...)
		case 1:
			p.HostnameSpread(int32(1+rng.IntN(3)), sel("app", app), opts...)
		}
		snap.Pods = append(snap.Pods, p.Obj())
	}
	return snap
}

// checkEC2Seeds solves the workloads draw makes on the EC2 catalog from
// seeds 0..n-1 (PCG stream), each checked by verifyPlan and checkCounts.
func checkEC2Seeds(t *testing.T, n, stream uint64, draw func(*rand.Rand, []*cloudprovider.InstanceType) *simulator.Snapshot) {
	t.Parallel()
	types := ec2Types(t)
	for seed := range n {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			snap := draw(rand.New(rand.NewPCG(seed, stream)), types)
			req := simulator.Request{Pods: snap.Pods}
			verifyPlan(t, snap, simulator.Options{}, req, simulator.New(snap, simulator.Options{}).Solve(req))
			checkCounts(t, snap, req)
		})
	}
}

// checkCounts fails the test unless the solve's spread counts are what
// its placements imply (simulator.CheckSpreadCounts).
func checkCounts(t *testing.T, snap *simulator.Snapshot, req simulator.Request) {
	t.Helper()
	if err := simulator.CheckSpreadCounts(simulator.New(snap, simulator.Options{}), req); err != nil {
		t.Errorf("spread counts: %v", err)
	}
}

// TestPlanProperties solves 150 random workloads (randomMix), 80 of zonal
// pods among others (randomZonalMix), 60 whose spreads count different
// nodes (randomFilterMix) and 300 random fuzz snapshots, and checks each plan independently of how the simulator
// made it (verifyPlan): every pod accounted for once, capacity, taints and
// node affinity, and the in-order replay of checkFidelity (each pod's zonal
// spread holds when it binds; each zonal affinity finds its group; no claim
// free to launch in any zone holds a pod a zonal group counts; the plan's
// cost is the sum of its claims' cheapest launchable offerings), and that
// the solve's spread counts are what its placements imply (checkCounts).
// Each zonal
// self-affinity group must also end up in one zone. With DOVETAIL_ORACLE_DIR
// set, every plan is written for the kube-scheduler oracle, which checks each
// pod on its claim with the scheduler's own filter plugins.
func TestPlanProperties(t *testing.T) {
	t.Parallel()
	t.Run("random mix", func(t *testing.T) {
		t.Parallel()
		for seed := range uint64(150) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				snap := randomMix(rand.New(rand.NewPCG(seed, 15)))
				req := simulator.Request{Pods: snap.Pods}
				plan := simulator.New(snap, simulator.Options{}).Solve(req)
				verifyPlan(t, snap, simulator.Options{}, req, plan)
				checkCounts(t, snap, req)
				r := newResult(snap, req, plan)
				groups := map[string]map[string]bool{}
				for _, p := range snap.Pods {
					if v, ok := p.Labels["my-affinity"]; ok && r.loc[p.Name] != "" && !isUnschedulable(plan, p) {
						if groups[v] == nil {
							groups[v] = map[string]bool{}
						}
						groups[v][r.zone(p.Name)] = true
					}
				}
				for v, zones := range groups {
					if len(zones) != 1 {
						t.Errorf("affinity group my-affinity=%s in zones %v, want one", v, zones)
					}
				}
			})
		}
	})
	t.Run("zonal mix", func(t *testing.T) { checkEC2Seeds(t, 80, 25, randomZonalMix) })
	t.Run("filter mix", func(t *testing.T) { checkEC2Seeds(t, 60, 7, randomFilterMix) })
	t.Run("fuzz snapshots", func(t *testing.T) {
		t.Parallel()
		for seed := range uint64(300) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 5))
				data := make([]byte, 96)
				for i := range data {
					data[i] = byte(rng.IntN(256))
				}
				snap, req, opts := fuzzSnapshot(&bytes{data: data})
				plan := simulator.New(snap, opts).Solve(req)
				verifyPlan(t, snap, opts, req, plan)
			})
		}
	})
}

func isUnschedulable(plan *simulator.Plan, p *corev1.Pod) bool {
	for _, u := range plan.Unschedulable {
		if u.Pod == p {
			return true
		}
	}
	return false
}
