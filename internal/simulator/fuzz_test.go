package simulator_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// bytes reads a fuzz input as a stream of small choices; past the end every
// choice is 0, so any input decodes to a valid snapshot.
type bytes struct {
	data []byte
	pos  int
}

func (b *bytes) pick(n int) int {
	if b.pos >= len(b.data) {
		return 0
	}
	v := int(b.data[b.pos]) % n
	b.pos++
	return v
}

func (b *bytes) of(options ...string) string { return options[b.pick(len(options))] }

// fuzzSnapshot decodes a snapshot: up to three NodePools (taints,
// requirements, limits, weights), up to three existing nodes with bound pods,
// and up to twelve pending pods mixing node selectors, tolerations, host
// ports, spreads, and pod (anti-)affinities, plus a request that may remove a
// node or cap new nodes.
func fuzzSnapshot(b *bytes) (*simulator.Snapshot, simulator.Request, simulator.Options) {
	zones := []string{fake.Zone1, fake.Zone2, fake.Zone3}
	snap := &simulator.Snapshot{}
	for i := range 1 + b.pick(3) {
		np := dtesting.MakeNodePool(fmt.Sprintf("pool-%d", i)).Weight(int32(1 + b.pick(3)))
		switch b.pick(4) {
		case 1:
			np.Taint("t", "", corev1.TaintEffectNoSchedule)
		case 2:
			np.Taint("soft", "", corev1.TaintEffectPreferNoSchedule)
		}
		switch b.pick(5) {
		case 1:
			np.Req(zoneKey, corev1.NodeSelectorOpIn, zones[b.pick(3)])
		case 2:
			np.Req(categoryKey, corev1.NodeSelectorOpIn, b.of("c", "m"))
		case 3:
			np.Req(ctKey, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot)
		case 4:
			np.ReqMinValues(familyKey, corev1.NodeSelectorOpExists, 1+b.pick(3))
		}
		if b.pick(3) == 0 {
			np.Limit("cpu", fmt.Sprint(2+b.pick(20)))
		}
		snap.NodePools = append(snap.NodePools, nodepool(np))
	}
	label := func(p *dtesting.PodWrapper) *dtesting.PodWrapper { return p.Label("app", b.of("a", "b")) }
	for i := range b.pick(4) {
		n := dtesting.MakeNode(fmt.Sprintf("node-%d", i)).Zone(zones[b.pick(3)]).NodePool(snap.NodePools[b.pick(len(snap.NodePools))].NodePool.Name).
			Alloc("cpu", fmt.Sprint(1+b.pick(4)), "memory", "8Gi", "pods", "10")
		if b.pick(4) == 0 {
			n.NotInitialized()
		}
		if b.pick(5) == 0 {
			n.Deleting()
		}
		for j := range b.pick(3) {
			p := label(dtesting.MakePod(fmt.Sprintf("bound-%d-%d", i, j)).Req("cpu", "500m"))
			if b.pick(3) == 0 {
				p.PodAntiAffinity(b.of(hostKey, zoneKey), sel("app", "a"))
			}
			n.Pod(p.Obj())
		}
		snap.Nodes = append(snap.Nodes, n.Obj())
	}
	for i := range 1 + b.pick(12) {
		p := label(dtesting.MakePod(fmt.Sprintf("pod-%02d", i)).Req("cpu", b.of("100m", "500m", "1", "3")).Req("memory", b.of("128Mi", "1Gi", "6Gi")))
		for range b.pick(3) {
			switch b.pick(10) {
			case 0:
				p.NodeSelector(zoneKey, zones[b.pick(3)])
			case 1:
				p.Toleration("t", corev1.TolerationOpExists, "", "")
			case 2:
				p.HostPort(80)
			case 3:
				p.ZoneSpread(1, sel("app", b.of("a", "b")))
			case 4:
				p.HostnameSpread(int32(1+b.pick(2)), sel("app", b.of("a", "b")), dtesting.ScheduleAnyway())
			case 5:
				p.PodAntiAffinity(b.of(hostKey, zoneKey), sel("app", b.of("a", "b")))
			case 6:
				p.PodAffinity(b.of(hostKey, zoneKey), sel("app", b.of("a", "b")))
			case 7:
				p.PreferredPodAntiAffinity(10, hostKey, sel("app", "a"))
			case 8:
				p.PreferredNodeAffinity(5, zoneKey, corev1.NodeSelectorOpIn, zones[b.pick(3)])
			case 9:
				p.NodeAffinity(cpuKey, corev1.NodeSelectorOpGt, b.of("2", "4"))
			}
		}
		snap.Pods = append(snap.Pods, p.Obj())
	}
	req := simulator.Request{Pods: snap.Pods}
	if len(snap.Nodes) > 0 && b.pick(3) == 0 {
		n := snap.Nodes[b.pick(len(snap.Nodes))]
		req.RemoveNodes = []string{n.Name}
		req.Pods = append(req.Pods, n.Pods...)
	}
	if b.pick(4) == 0 {
		limit := b.pick(3)
		req.MaxNewNodeClaims = &limit
	}
	opts := simulator.Options{}
	if b.pick(3) == 0 {
		opts.PreferencePolicy = simulator.PreferencesIgnore
	}
	if b.pick(3) == 0 {
		opts.MinValuesPolicy = simulator.MinValuesBestEffort
	}
	return snap, req, opts
}

// FuzzSolve checks that any snapshot solves without panicking, to a plan that
// passes verifyPlan, the same plan every time.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 1, 0, 2, 1, 3, 0, 1, 2, 2, 1, 0, 1, 3, 11, 2, 5, 1, 0, 3, 1, 2, 4, 1})
	f.Add([]byte{1, 0, 4, 2, 1, 2, 0, 1, 0, 2, 1, 0, 1, 9, 0, 1, 2, 3, 3, 0, 2, 6, 1, 1, 7, 2, 2, 8})
	f.Add([]byte{3, 2, 1, 0, 1, 0, 3, 1, 2, 2, 0, 0, 2, 2, 1, 1, 2, 1, 1, 1, 0, 11, 0, 2, 2, 5, 0, 1, 2, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, req, opts := fuzzSnapshot(&bytes{data: data})
		m := simulator.New(snap, opts)
		plan := m.Solve(req)
		verifyPlan(t, snap, opts, req, plan)
		hardAntiAffinityHolds(t, newResult(snap, req, plan))
		if again := dump(m.Solve(req)); again != dump(plan) {
			t.Errorf("second solve differs:\n%s\nvs\n%s", dump(plan), again)
		}
	})
}
