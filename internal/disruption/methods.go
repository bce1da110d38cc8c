package disruption

import (
	"cmp"
	"slices"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// emptiness deletes every empty candidate whose consolidateAfter has
// passed, whatever the pool's consolidation policy, as many per pool as the
// pool's Empty budget allows.
func (p *pass) emptiness() *Command {
	var chosen []*Candidate
	price := 0.0
	for _, c := range p.candidates {
		if !emptyCandidate(c) {
			continue
		}
		if !p.budget(c.NodePool.Name, v1.DisruptionReasonEmpty).take() {
			p.hold(c, v1.DisruptionReasonEmpty)
			continue
		}
		chosen = append(chosen, c)
		price += c.Price
	}
	if len(chosen) == 0 {
		return nil
	}
	return &Command{Method: MethodEmptiness, Reason: v1.DisruptionReasonEmpty, Candidates: chosen, PriceBefore: price}
}

// emptyCandidate: no pods to move and consolidateAfter (which implies it is
// not Never) has passed.
func emptyCandidate(c *Candidate) bool { return c.Empty() && c.Consolidatable }

// driftCandidates are the drifted candidates: empty ones first, then the
// longest drifted, then by name.
func (p *pass) driftCandidates() []*Candidate {
	var out []*Candidate
	for _, c := range p.candidates {
		if c.Drifted && !c.NodePool.IsStatic() {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *Candidate) int {
		return cmp.Or(
			cmp.Compare(boolInt(!a.Empty()), boolInt(!b.Empty())),
			a.DriftedSince.Compare(b.DriftedSince),
			cmp.Compare(a.Name(), b.Name()),
		)
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drift replaces drifted nodes, those of static pools first (staticDrift).
// Empty ones are deleted together, within
// the Drifted budgets. Otherwise the first drifted node whose pods can be
// placed (on nodes that have not drifted, or on new NodeClaims) gets a
// command: its replacements launch and initialize before it is drained.
// Other drifted nodes are avoided as destinations, so that no pod moves
// twice during a roll.
func (p *pass) drift() *Command {
	if cmd := p.staticDrift(); cmd != nil {
		return cmd
	}
	cands := p.driftCandidates()
	var empty []*Candidate
	for _, c := range cands {
		if !c.Empty() {
			continue
		}
		if p.budget(c.NodePool.Name, v1.DisruptionReasonDrifted).take() {
			empty = append(empty, c)
		} else {
			p.hold(c, v1.DisruptionReasonDrifted)
		}
	}
	if len(empty) > 0 {
		cmd := &Command{Method: MethodDrift, Reason: v1.DisruptionReasonDrifted, Candidates: empty}
		for _, c := range empty {
			cmd.PriceBefore += c.Price
		}
		return cmd
	}
	for _, c := range cands {
		if p.budget(c.NodePool.Name, v1.DisruptionReasonDrifted).remaining() <= 0 {
			p.budget(c.NodePool.Name, v1.DisruptionReasonDrifted).blocked = true
			p.hold(c, v1.DisruptionReasonDrifted)
			continue
		}
		avoid := make([]string, 0, len(p.drifted))
		for _, name := range p.drifted {
			if name != c.Name() {
				avoid = append(avoid, name)
			}
		}
		sim := p.simulate([]*Candidate{c}, avoid, nil, 0, true)
		if sim.failed != "" {
			p.block(c.Machine, ReasonDisruptionBlocked, "Drifted node cannot be replaced: "+sim.failed)
			continue
		}
		cmd := &Command{Method: MethodDrift, Reason: v1.DisruptionReasonDrifted, Candidates: []*Candidate{c}, PriceBefore: c.Price, Plan: sim.plan}
		for _, claim := range sim.replacements {
			cmd.Replacements = append(cmd.Replacements, &Replacement{NodePool: p.pools[claim.NodePool].np, Claim: claim})
			cmd.PriceAfter += claim.Price
		}
		return cmd
	}
	return nil
}
