package simulator

import (
	"cmp"
	"math"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// Open claims and generic pods. When generic pods are placed, the claims
// the other pods opened exist already: each will be launched whatever the
// generic pods do, at the price of the cheapest type that holds its pods.
// Their target types were chosen one pod at a time, before the generic pods
// were looked at, so their room rarely suits the generic pods: filled in
// pod order it takes the first shapes and leaves a lopsided rest that no
// type packs well (memory-heavy pods stranding cpu on r-types, say).
//
// fillClaims instead fills the claims in two passes. First the room the
// claims already pay for: each claim drops to the cheapest type holding its
// pods (room beyond it is not paid for) and takes the generic pods closest
// in shape to that room (packer.fill), least room first. Then growth: a
// fill of claim c is a type t it may take and the pods to add; it costs
// price(t) - price(cheapest type holding c) and saves the drop in the
// fractional cost of the generic pods left (packer.restCost). Fills are
// made in order of cost per saving (each re-evaluated just before, as pods
// are taken meanwhile) while they cost less than new claims would for the
// same pods (1 + newBinLoss per saving).

// newBinLoss is what packing pods onto new claims typically costs beyond
// their fractional lower bound, as a fraction of it (a few percent on the
// generic parts of ec2-mix). The fractional cost of the pods left is a
// lower bound; against it alone any imperfect fill of an open claim would
// look worse than leaving the pods for new claims, which waste room too.
const newBinLoss = 0.03

// maxGrowthFactor bounds the types fillClaims tries for a claim to those
// costing at most this many times the cheapest type that holds it, and
// maxFillTries how many of them are filled (see bestFill): enough to let a
// claim that holds one small pod grow into a well-filled node, few enough
// to keep the search short on catalogues of hundreds of sizes.
const (
	maxGrowthFactor = 1e9
	maxFillTries    = 32
)

// claimFill is the best growth found for a claim: its type and cost per saving.
type claimFill struct {
	c     *claim
	t     int
	score float64
}

// fillClaims places generic pods of pool p into the pool's open claims,
// choosing their types (see above), and returns the pods left.
func (s *solve) fillClaims(p *pool, pods []*podInfo) []*podInfo {
	var claims []*claim
	for _, c := range s.claims {
		if c.pool == p && c.target >= 0 {
			claims = append(claims, c)
		}
	}
	tmpl := s.fresh(p)
	if len(claims) == 0 || len(pods) == 0 || len(p.hull) == 0 {
		return pods
	}
	pk := s.newPacker(p, tmpl, pods)
	// 1. The room claims already pay for, least room first.
	for _, c := range claims {
		if c.target != c.cheapest {
			s.retarget(c, c.cheapest)
		}
	}
	byRoom := slices.Clone(claims)
	slices.SortStableFunc(byRoom, slackLess)
	for _, c := range byRoom {
		if pk.fill(c.cheapest, c.requests) > 0 {
			pk.commitTo(c, c.cheapest)
		}
	}
	// 2. Growth, best first.
	cands := map[string][]int{}
	clear(pk.took)
	before := pk.restCost(false)
	var fills []claimFill
	for _, c := range claims {
		if f, ok := pk.bestFill(c, before, cands); ok {
			fills = append(fills, f)
		}
	}
	slices.SortStableFunc(fills, func(a, b claimFill) int { return cmp.Compare(a.score, b.score) })
	for _, f := range fills {
		if before <= 0 {
			break
		}
		f, ok := pk.bestFill(f.c, before, cands)
		if !ok {
			continue
		}
		pk.fill(f.t, f.c.requests)
		pk.commitTo(f.c, f.t)
		clear(pk.took)
		before = pk.restCost(false)
	}
	return pk.left()
}

// bestFill returns claim c's fill with the least cost per saving, if one
// costs less than new claims would; before is the fractional cost of the
// generic pods left. On equal scores the larger saving wins.
//
// Filling is the costly step, so types are tried in order of a bound on
// their score, and only while the bound can beat the best so far, at most
// maxFillTries of them: the fractional cost is convex in the demand, so a
// fill saves at most the pods' resource prices (resourcePrices) times the
// room it fills, clipped to their shapes and to what is left of them.
func (pk *packer) bestFill(c *claim, before float64, cache map[string][]int) (claimFill, bool) {
	p := pk.p
	price := func(t int) float64 { return p.price(t, c.pairs, c.allPairs) }
	base := price(c.cheapest)
	clear(pk.took)
	lo, hi, cpu, mem := pk.restShape()
	pc, pm := resourcePrices(pk.hullFor(lo, hi), cpu, mem)
	tries := pk.tries[:0]
	for _, t := range pk.claimCandidates(c, cache) {
		pt := price(t)
		if pk.s.priceCap > 0 && pt >= pk.s.priceCap {
			continue
		}
		a := p.effAlloc[t]
		rc, rm := clip(float64(a[resources.CPU]-c.requests[resources.CPU]), float64(a[resources.Memory]-c.requests[resources.Memory]), lo, hi)
		if ub := pc*min(max(rc, 0), cpu) + pm*min(max(rm, 0), mem); ub > 0 {
			tries = append(tries, fillTry{t, (pt - base) / ub})
		}
	}
	slices.SortStableFunc(tries, func(a, b fillTry) int { return cmp.Compare(a.bound, b.bound) })
	pk.tries = tries
	best := claimFill{c: c, t: -1, score: 1 + newBinLoss}
	bestGain, allPrice := 0.0, math.Inf(1)
	for i, try := range tries {
		if i >= maxFillTries || try.bound >= best.score {
			break
		}
		t, pt := try.t, price(try.t)
		if pt >= allPrice || pk.fill(t, c.requests) <= 0 {
			continue
		}
		after := pk.restCost(false)
		if after <= 0 {
			allPrice = pt // it takes every pod: dearer types cannot do better
		}
		gain := before - after
		if gain <= 0 {
			continue
		}
		if sc := (pt - base) / gain; sc < best.score-1e-9 || sc <= best.score+1e-9 && gain > bestGain {
			best.t, best.score, bestGain = t, sc, gain
		}
	}
	return best, best.t >= 0
}

// fillTry is a type bestFill may try, with a lower bound of its score.
type fillTry struct {
	t     int
	bound float64
}

// retarget makes claim c fill up to type t, which holds its pods.
func (s *solve) retarget(c *claim, t int) {
	s.unindex(c)
	s.addSlack(c.slack, -1)
	c.target, c.price = t, c.pool.price(t, c.pairs, c.allPairs)
	c.slack = slices.Clone(c.pool.effAlloc[t])
	c.slack.Sub(c.requests)
	s.addSlack(c.slack, 1)
	s.index(c)
	s.reserve(c)
}

// claimCandidates returns the types claim c may take that no other such
// type matches in every requested resource for no more money (at the
// claim's offerings), cheapest first. Results are cached per set of types
// and offerings.
func (pk *packer) claimCandidates(c *claim, cache map[string][]int) []int {
	key := make([]byte, 0, 8*(len(c.options)+len(c.pairs)))
	for _, w := range c.options {
		key = appendInt64(key, int64(w))
	}
	for _, w := range c.pairs {
		key = appendInt64(key, int64(w))
	}
	if out, ok := cache[string(key)]; ok {
		return out
	}
	out := pk.undominated(c.options, func(t int) float64 { return pk.p.price(t, c.pairs, c.allPairs) })
	cache[string(key)] = out
	return out
}

// undominated returns the types of set with a finite price that no other
// type of set matches in every requested resource for no more money,
// cheapest first.
func (pk *packer) undominated(set bitset.Set, price func(int) float64) []int {
	types := make([]int, 0, set.Count())
	for t := set.First(); t >= 0; t = set.Next(t + 1) {
		if !math.IsInf(price(t), 1) {
			types = append(types, t)
		}
	}
	slices.SortStableFunc(types, func(a, b int) int { return cmp.Compare(price(a), price(b)) })
	alloc := pk.p.effAlloc
	var out []int
	for _, t := range types {
		dominated := false
		for _, f := range out {
			dominated = true
			for _, d := range pk.dims {
				if alloc[f][d] < alloc[t][d] {
					dominated = false
					break
				}
			}
			if dominated {
				break
			}
		}
		if !dominated {
			out = append(out, t)
		}
	}
	return out
}

// commitTo adds the pods of the last fill (packer.took) to claim c, which
// takes type t. A pod the claim turns down (not expected: generic pods have
// no constraints the fill does not see) stays with the pods left.
func (pk *packer) commitTo(c *claim, t int) {
	s := pk.s
	for i, sh := range pk.shapes {
		for range pk.took[i] {
			pi := sh.pods[0]
			v := pi.sig.views[pi.level]
			plan, ok := s.tryClaim(c, pi, v)
			if !ok || !plan.options.Has(t) {
				break
			}
			plan.target, plan.price = t, c.pool.price(t, plan.pairs, plan.allPairs)
			s.commitClaim(c, pi, v, &plan)
			sh.pods = sh.pods[1:]
		}
	}
}
