package disruption

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
)

// LimitNodes is the limits key that caps a NodePool's node count.
const LimitNodes corev1.ResourceName = "nodes"

// staticDrift replaces a drifted node of a static NodePool (Karpenter's
// StaticDrift): one command per pass, for the longest drifted candidate,
// with one replacement NodeClaim of the pool (its cheapest launchable
// instance types, whatever the node's pods need: the pods go wherever the
// kube-scheduler puts them) that initializes before the node drains, so the
// pool never drops below its replicas. It stays within the pool's Drifted
// budget; it waits while the pool is being scaled down (more nodes than
// replicas), and when the replacement would cross limits.nodes, as
// Karpenter does without its TerminateFirstDrift gate.
func (p *pass) staticDrift() *Command {
	var cands []*Candidate
	for _, c := range p.candidates {
		if c.Drifted && c.NodePool.IsStatic() {
			cands = append(cands, c)
		}
	}
	slices.SortStableFunc(cands, func(a, b *Candidate) int {
		return cmp.Or(a.DriftedSince.Compare(b.DriftedSince), cmp.Compare(a.Name(), b.Name()))
	})
	for _, c := range cands {
		pi := p.pools[c.NodePool.Name]
		budget := p.budget(pi.np.Name, v1.DisruptionReasonDrifted)
		if budget.remaining() <= 0 {
			budget.blocked = true
			p.hold(c, v1.DisruptionReasonDrifted)
			continue
		}
		if msg := p.staticReplacementBlocked(pi); msg != "" {
			p.block(c.Machine, ReasonDisruptionBlocked, "Drifted node of a static NodePool cannot be replaced: "+msg)
			continue
		}
		claim, err := nodeclaimutil.ForStaticPool(pi.sim, p.opts.Simulator.MaxInstanceTypes)
		if err != nil {
			p.block(c.Machine, ReasonDisruptionBlocked, "Drifted node of a static NodePool cannot be replaced: "+err.Error())
			continue
		}
		budget.used++
		return &Command{
			Method: MethodDrift, Reason: v1.DisruptionReasonDrifted, Candidates: []*Candidate{c},
			Replacements: []*Replacement{{NodePool: pi.np, Claim: claim}},
			PriceBefore:  c.Price, PriceAfter: claim.Price,
		}
	}
	return nil
}

// staticReplacementBlocked says why a static pool cannot stage a
// replacement now, or "".
func (p *pass) staticReplacementBlocked(pi *poolInfo) string {
	if !nodepoolutil.IsReady(pi.np) || len(pi.sim.InstanceTypes) == 0 {
		return fmt.Sprintf("NodePool %s is not ready to launch", pi.np.Name)
	}
	count := p.staticNodeCount(pi.np.Name)
	replicas := *pi.np.Spec.Replicas
	if count > replicas {
		return fmt.Sprintf("NodePool %s is scaling down (%d nodes, %d replicas)", pi.np.Name, count, replicas)
	}
	if limit, ok := pi.np.Spec.Limits[LimitNodes]; ok && count+1 > limit.Value() {
		return fmt.Sprintf("NodePool %s is at its node limit (%d nodes, limits.nodes %s)", pi.np.Name, count, limit.String())
	}
	return ""
}

// staticNodeCount counts the pool's machines that stay: launched or in
// flight, not being deleted and not in a queued command.
func (p *pass) staticNodeCount(pool string) int64 {
	var n int64
	for _, m := range p.in.Nodes {
		if m.NodePoolName() != pool || m.MarkedForDeletion || (m.NodeClaim != nil && p.in.Disrupting[m.NodeClaim.Name]) {
			continue
		}
		n++
	}
	return n
}
