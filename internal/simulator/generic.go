package simulator

import (
	"cmp"
	"math"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// Generic pods are pods that can go anywhere their NodePool's taints allow:
// no node requirements, no topology constraint of their own, none of other
// pods that selects them, no host ports and no volumes. Nothing about where
// one lands affects any other pod, so they are placed after the others, in
// bulk: first into room existing nodes and open claims already have, then
// packed onto new claims of the most cost-efficient instance types, which is
// what brings a plan close to the fractional lower bound on a real catalogue.

// isGeneric reports whether a pod at view v is generic.
func (s *solve) isGeneric(pi *podInfo, v *podView) bool {
	sig := v.sig
	return pi.invalid == "" && sig.invalid == "" && v.noAlt == "" &&
		len(v.groups) == 0 && len(sig.selectedBy) == 0 && len(sig.ownsAnti) == 0 &&
		len(sig.ports) == 0 && sig.volumes == nil && len(sig.steps) == 0 &&
		len(v.nodeAlts) == 1 && len(v.nodeAlts[0]) == 0
}

// packGeneric places generic pods and returns those it could not place:
// onto existing nodes; into the NodePool's open claims, choosing their types
// (fillClaims); into any room left (tryRoom); and the rest onto new claims,
// packed per NodePool (binPack).
func (s *solve) packGeneric(pods []*podInfo) []*podInfo {
	var failed []*podInfo
	byPool := map[*pool][]*podInfo{}
	var pools []*pool
	for _, pi := range pods {
		v := pi.sig.views[pi.level]
		if s.tryNodes(pi, v) {
			continue
		}
		tmpl, _, ok := s.bestNewClaim(pi, v)
		if !ok {
			// No new claim can take it (limits, say), but open room may.
			if !s.tryRoom(pi, v) {
				failed = append(failed, pi)
			}
			continue
		}
		if byPool[tmpl.pool] == nil {
			pools = append(pools, tmpl.pool)
		}
		byPool[tmpl.pool] = append(byPool[tmpl.pool], pi)
	}
	slices.SortFunc(pools, func(a, b *pool) int { return cmp.Compare(a.idx, b.idx) })
	for _, p := range pools {
		byPool[p] = s.fillClaims(p, byPool[p])
	}
	for _, p := range pools {
		var rest []*podInfo
		for _, pi := range byPool[p] {
			if !s.tryRoom(pi, pi.sig.views[pi.level]) {
				rest = append(rest, pi)
			}
		}
		failed = append(failed, s.binPack(p, rest)...)
	}
	return failed
}

// tryNodes places a pod on the first existing node that fits.
func (s *solve) tryNodes(pi *podInfo, v *podView) bool {
	for i := range s.m.nodes {
		if s.nodeOK(pi, v, int32(i)) {
			s.commitNode(pi, v, int32(i))
			return true
		}
	}
	return false
}

// tryRoom places a pod, best fit, into room an open claim already pays for.
func (s *solve) tryRoom(pi *podInfo, v *podView) bool {
	start, _ := slices.BinarySearchFunc(s.bySlack, pi.req[resources.CPU], func(c *claim, cpu int64) int {
		return cmp.Compare(c.slack[resources.CPU], cpu)
	})
	for i, checks := start, 0; i < len(s.bySlack) && checks < maxSlackChecks; i++ {
		c := s.bySlack[i]
		if !pi.req.Fits(c.slack) || !s.poolTolerated(v, c.pool) {
			continue
		}
		checks++
		if plan, ok := s.tryClaim(c, pi, v); ok && plan.target == c.target && plan.price <= c.price {
			s.commitClaim(c, pi, v, &plan)
			return true
		}
	}
	return false
}

// binPack packs generic pods onto new claims of pool p. It packs on plain
// vectors first (pack.go), improves the packing, then turns each bin into a
// claim.
//
//  1. Rounds guided by the fractional lower bound (packer.rounds), then the
//     tail, one bin at a time (packer.finish).
//  2. Emptying: bins are tried cheapest per worth last; a bin whose pods all
//     fit in the other bins' room is emptied into them.
//  3. Each bin takes the cheapest type that holds its pods.
//
// Pools whose limits bind or solves that cap new claims use the greedy
// placement instead, which checks those as it goes.
func (s *solve) binPack(p *pool, pods []*podInfo) []*podInfo {
	tmpl := s.fresh(p)
	if s.limitsBind(p, nil) || s.claimsCap >= 0 || len(p.hull) == 0 {
		return s.greedy(pods)
	}
	pk := s.newPacker(p, tmpl, pods)
	bins := pk.finish(pk.rounds())
	bins = pk.emptyBins(bins)
	var failed []*podInfo
	for _, b := range bins {
		if t := s.holding(p, tmpl, b.used); t >= 0 {
			b.t = t
		}
		failed = append(failed, s.materialize(p, b)...)
	}
	// Pods no type takes on its own are placed (or explained) the usual way.
	return append(failed, s.greedy(pk.left())...)
}

// bestBin returns the bin with room for req whose room is closest to it in
// shape (the least room left on ties), or nil.
func (pk *packer) bestBin(bins []*bin, req resources.Vector) *bin {
	var best *bin
	bestAlign, bestLeft := -1.0, math.Inf(1)
	room := pk.room
	for _, b := range bins {
		copy(room, pk.p.effAlloc[b.t])
		room.Sub(b.used)
		if !req.Fits(room) {
			continue
		}
		al, l := pk.align(req, room), pk.worth(room)-pk.worth(req)
		if al > bestAlign+1e-3 || al > bestAlign-1e-3 && l < bestLeft {
			best, bestAlign, bestLeft = b, max(al, bestAlign), l
		}
	}
	return best
}

// emptyBins empties bins into the others' room, trying the least efficient
// bins (price per worth of what they hold) first.
func (pk *packer) emptyBins(bins []*bin) []*bin {
	eff := func(b *bin) float64 {
		return pk.price(b.t) / max(pk.worth(b.used), 1e-12)
	}
	order := slices.Clone(bins)
	slices.SortStableFunc(order, func(a, b *bin) int { return cmp.Compare(eff(b), eff(a)) })
	removed := map[*bin]bool{}
	for _, victim := range order {
		var others []*bin
		for _, b := range bins {
			if b != victim && !removed[b] {
				others = append(others, b)
			}
		}
		moved := map[*bin][]*podInfo{}
		ok := true
		for _, pi := range victim.pods {
			b := pk.bestBin(others, pi.req)
			if b == nil {
				ok = false
				break
			}
			b.used.Add(pi.req)
			moved[b] = append(moved[b], pi)
		}
		if !ok {
			for b, ps := range moved {
				for _, pi := range ps {
					b.used.Sub(pi.req)
				}
			}
			continue
		}
		for b, ps := range moved {
			b.pods = append(b.pods, ps...)
		}
		removed[victim] = true
	}
	var out []*bin
	for _, b := range bins {
		if !removed[b] {
			out = append(out, b)
		}
	}
	return out
}

// materialize turns a bin into a claim of its type; pods the claim turns
// down (not expected) are placed the greedy way.
func (s *solve) materialize(p *pool, b *bin) []*podInfo {
	var c *claim
	var rest []*podInfo
	for _, pi := range b.pods {
		v := pi.sig.views[pi.level]
		if c == nil {
			tmpl := s.fresh(p)
			plan, ok := s.tryClaim(tmpl, pi, v)
			if !ok || !plan.options.Has(b.t) {
				rest = append(rest, pi)
				continue
			}
			plan.target, plan.price = b.t, p.price(b.t, plan.pairs, plan.allPairs)
			c = s.openClaim(tmpl)
			s.commitClaim(c, pi, v, &plan)
			continue
		}
		if plan, ok := s.tryClaim(c, pi, v); ok && plan.target == c.target {
			s.commitClaim(c, pi, v, &plan)
			continue
		}
		rest = append(rest, pi)
	}
	return s.greedy(rest)
}

// greedy places pods one by one the way constrained pods are placed.
func (s *solve) greedy(pods []*podInfo) []*podInfo {
	var failed []*podInfo
	for _, pi := range pods {
		if !s.place(pi) {
			failed = append(failed, pi)
		}
	}
	return failed
}
