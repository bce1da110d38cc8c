package disruption

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

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
}

// simulate places the candidates' pods, and the pods that will move anyway
// (pending pods, pods of nodes being disrupted), on the cluster without
// the candidates, avoiding the given nodes, with at most maxClaims new
// NodeClaims (nil: no cap) strictly cheaper than maxPrice (0: no cap).
// Only the candidates' pods must be placed; new claims that hold none of
// them are left to provisioning.
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
	sim := simulation{plan: plan}
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
