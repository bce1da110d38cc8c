package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// simulation is the outcome of asking "without these candidates, where do
// their pods go?".
type simulation struct {
	plan *simulator.Plan
	// failed is why a candidate pod could not be placed, "" when all were.
	failed string
	// replacements are the new NodeClaims that hold a candidate pod.
	replacements []*simulator.NewNodeClaim
	// avoided are the nodes the simulation put no pod on (they stay).
	avoided []string
}

// simulate places the candidates' pods, and the pods that will move anyway
// (pending pods, pods of nodes being disrupted), on the cluster without
// the candidates, avoiding the given nodes, with at most maxClaims new
// NodeClaims (nil: no cap) strictly cheaper than maxPrice (0: no cap).
// Only the candidates' pods must be placed; new claims that hold none of
// them are left to provisioning. Consolidation also refuses a move that
// leaves a pod with room now without it (takesRoom).
// Without explain, a failure names the pod but not why it fits nowhere,
// which is much cheaper to find out.
func (p *pass) simulate(cands []*Candidate, avoid []string, maxClaims *int, maxPrice float64, explain bool) simulation {
	own := map[*corev1.Pod]bool{}
	req := simulator.Request{MaxNewNodeClaims: maxClaims, MaxNewNodeClaimPrice: maxPrice, AvoidNodes: avoid, SkipReasons: !explain}
	req.RemoveNodes = append(req.RemoveNodes, p.removed...)
	for _, c := range cands {
		req.RemoveNodes = append(req.RemoveNodes, c.Name())
		for _, pod := range c.Pods {
			own[pod] = true
			req.Pods = append(req.Pods, pod)
		}
	}
	req.Pods = append(req.Pods, p.background...)
	plan := p.getModel().Solve(req)
	sim := simulation{plan: plan, avoided: avoid}
	for _, u := range plan.Unschedulable {
		if own[u.Pod] {
			sim.failed = fmt.Sprintf("pod %s/%s cannot be rescheduled", u.Pod.Namespace, u.Pod.Name)
			if u.Reason != "" {
				sim.failed += ": " + u.Reason
			}
			break
		}
	}
	for _, claim := range plan.NewNodeClaims {
		for _, pod := range claim.Pods {
			if own[pod] {
				sim.replacements = append(sim.replacements, claim)
				break
			}
		}
	}
	return sim
}

// roomNow returns, for each pod that will move anyway (pending pods, pods
// of nodes being disrupted) and has room on the machines the cluster keeps
// without any command (the existing and in-flight nodes, less those being
// disrupted), the node of that room. Solved once per pass, on first use
// (single-node consolidation asks from several goroutines).
func (p *pass) roomNow() map[*corev1.Pod]string {
	p.roomOnce.Do(func() {
		p.room = map[*corev1.Pod]string{}
		if len(p.background) == 0 {
			return
		}
		none := 0
		plan := p.getModel().Solve(simulator.Request{Pods: p.background, RemoveNodes: p.removed, MaxNewNodeClaims: &none, SkipReasons: true})
		for _, placement := range plan.Placements {
			p.room[placement.Pod] = placement.Node
		}
	})
	return p.room
}

// takesRoom names a pod that will move anyway which has room on the
// cluster now (roomNow) and which the simulated command leaves on no
// machine that stays and on none of its replacements; "" when there is
// none. Such a move only gives that pod's room (often the node
// provisioning planned it onto) to the candidates' pods: the pod would
// need a new node. Room on a node the simulation kept off stays the pod's:
// the node stays and the command puts nothing on it.
func (p *pass) takesRoom(sim simulation) string {
	room := p.roomNow()
	if len(room) == 0 {
		return ""
	}
	kept := make(map[*corev1.Pod]bool, len(sim.plan.Placements))
	for _, placement := range sim.plan.Placements {
		kept[placement.Pod] = true
	}
	for _, claim := range sim.replacements {
		for _, pod := range claim.Pods {
			kept[pod] = true
		}
	}
	for _, pod := range p.background {
		if node, ok := room[pod]; ok && !kept[pod] && !slices.Contains(sim.avoided, node) {
			what := "pending pod"
			if pod.Spec.NodeName != "" {
				what = "pod of a node being disrupted"
			}
			return fmt.Sprintf("%s %s would lose the room it has on the cluster", what, klog.KObj(pod))
		}
	}
	return ""
}
