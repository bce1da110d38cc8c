package disruption

import (
	"cmp"
	"slices"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// DisruptionReasonUnhealthy is the reason of repair commands: the
// DisruptionReason condition's reason on a repaired NodeClaim, and, in
// lower case, the reason label of karpenter_nodeclaims_disrupted_total
// ("unhealthy", as Karpenter counts repairs). It is no budget reason:
// repair ignores disruption budgets.
const DisruptionReasonUnhealthy v1.DisruptionReason = "Unhealthy"

// repairCandidates are the machines the node.health controller asked to
// repair (Input.Repairs), empty ones first, then by name. None of the
// voluntary guards applies (do-not-disrupt, PDBs, nominations,
// consolidateAfter, budgets): a node past its repair toleration is
// replaced regardless, as in Karpenter. Claims a queued command owns
// (disrupting or launched by it; in the live view of a cluster with shadow
// NodePools, the shadow pools' nodes too) and claims already going are
// left out.
func (p *pass) repairCandidates() []*Candidate {
	if len(p.in.Repairs) == 0 {
		return nil
	}
	var out []*Candidate
	for _, n := range p.in.Nodes {
		if n.NodeClaim == nil || n.Node == nil {
			continue
		}
		name := n.NodeClaim.Name
		why, requested := p.in.Repairs[name]
		if !requested || p.in.Disrupting[name] || p.in.Replacements[name] || n.MarkedForDeletion || n.Deleting() {
			continue
		}
		c := p.newCandidate(n, p.repairPool(n), reschedulable(n.Pods))
		c.Unhealthy = why
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b *Candidate) int {
		return cmp.Or(cmp.Compare(boolInt(!a.Empty()), boolInt(!b.Empty())), cmp.Compare(a.Name(), b.Name()))
	})
	return out
}

// repairPool is the machine's NodePool; a claim whose NodePool is gone (or
// that has none) is still repaired, under a stand-in with its name.
func (p *pass) repairPool(n *machine.Machine) *poolInfo {
	if pi := p.pools[n.NodePoolName()]; pi != nil {
		return pi
	}
	np := &v1.NodePool{}
	np.Name = n.NodePoolName()
	return &poolInfo{np: np}
}

// repair replaces the first unhealthy node requested: its pods are
// simulated as drift's are (other unhealthy nodes are no destination), and
// the replacements the simulation needs are launched and initialized
// before the node is deleted. When the pods cannot be placed the command
// deletes the node without replacements (Command.NoReplacement says why):
// repair is forced, and provisioning launches what the pods need once they
// are pending.
func (p *pass) repair() *Command {
	cands := p.repairCandidates()
	if len(cands) == 0 {
		return nil
	}
	c := cands[0]
	cmd := &Command{Method: MethodRepair, Reason: DisruptionReasonUnhealthy, Candidates: []*Candidate{c}, PriceBefore: c.Price}
	if c.Empty() {
		return cmd
	}
	avoid := make([]string, 0, len(p.in.Repairs))
	for _, n := range p.in.Nodes {
		if n.NodeClaim != nil && n.NodeClaim.Name != c.NodeClaimName() {
			if _, ok := p.in.Repairs[n.NodeClaim.Name]; ok {
				avoid = append(avoid, n.Name())
			}
		}
	}
	sim := p.simulate([]*Candidate{c}, avoid, nil, 0, true)
	if sim.failed != "" {
		cmd.NoReplacement = sim.failed
		return cmd
	}
	cmd.Plan = sim.plan
	for _, claim := range sim.replacements {
		cmd.Replacements = append(cmd.Replacements, &Replacement{NodePool: p.pools[claim.NodePool].np, Claim: claim})
		cmd.PriceAfter += claim.Price
	}
	return cmd
}
