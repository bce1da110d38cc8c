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

// packGeneric places generic pods and returns those it could not place.
func (s *solve) packGeneric(pods []*podInfo) []*podInfo {
	var failed []*podInfo
	byPool := map[*pool][]*podInfo{}
	var pools []*pool
	for _, pi := range pods {
		v := pi.sig.views[pi.level]
		if s.tryNodes(pi, v) || s.tryRoom(pi, v) {
			continue
		}
		tmpl, _, ok := s.bestNewClaim(pi, v)
		if !ok {
			failed = append(failed, pi)
			continue
		}
		if byPool[tmpl.pool] == nil {
			pools = append(pools, tmpl.pool)
		}
		byPool[tmpl.pool] = append(byPool[tmpl.pool], pi)
	}
	slices.SortFunc(pools, func(a, b *pool) int { return cmp.Compare(a.idx, b.idx) })
	for _, p := range pools {
		failed = append(failed, s.binPack(p, byPool[p])...)
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

// bin is a claim-to-be of a bulk pack: a type and the pods in it.
type bin struct {
	t    int
	used resources.Vector
	pods []*podInfo
}

// binPack packs generic pods onto new claims of pool p. It packs on plain
// vectors first, improves the packing, then turns each bin into a claim.
//
//  1. Rounds guided by the fractional lower bound: for the pods left, take
//     the cheapest mix of (at most two) types covering their cpu and
//     memory, plan the whole number of bins of each type the mix contains,
//     and fill them, largest pods first, each into the bin closest to it in
//     shape. Pods that fit no planned bin start the next round. When the mix
//     is less than one bin, one bin of the cheapest type that holds all the
//     pods left (else that fits the pod) takes what it can.
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
	var cpu, mem float64
	for _, pi := range pods {
		cpu += float64(pi.req[resources.CPU])
		mem += float64(pi.req[resources.Memory])
	}
	pc, pm := resourcePrices(p.hull, cpu, mem)
	worth := func(v resources.Vector) float64 {
		return pc*float64(v[resources.CPU]) + pm*float64(v[resources.Memory])
	}
	align := func(a, b resources.Vector) float64 {
		ax, ay := float64(a[resources.CPU])/max(cpu, 1), float64(a[resources.Memory])/max(mem, 1)
		bx, by := float64(b[resources.CPU])/max(cpu, 1), float64(b[resources.Memory])/max(mem, 1)
		n := math.Hypot(ax, ay) * math.Hypot(bx, by)
		if n == 0 {
			return 0
		}
		return (ax*bx + ay*by) / n
	}
	slices.SortStableFunc(pods, func(a, b *podInfo) int { return cmp.Compare(worth(b.req), worth(a.req)) })

	var bins []*bin
	var failed []*podInfo
	left := pods
	for round := 0; len(left) > 0; round++ {
		total := s.m.res.New()
		for _, pi := range left {
			total.Add(pi.req)
		}
		var planned []*bin
		a, xa, b, xb := lpMix(p, float64(total[resources.CPU]), float64(total[resources.Memory]))
		if a >= 0 && tmpl.reqMask.Has(a) && (b < 0 || tmpl.reqMask.Has(b)) && round < 16 {
			for range int(xa) {
				planned = append(planned, &bin{t: a, used: s.m.res.New()})
			}
			for range int(xb) {
				planned = append(planned, &bin{t: b, used: s.m.res.New()})
			}
		}
		if len(planned) == 0 {
			t := s.holding(p, tmpl, total)
			if t < 0 {
				t = s.holding(p, tmpl, left[0].req)
			}
			if t < 0 {
				return append(failed, s.greedy(left)...)
			}
			planned = []*bin{{t: t, used: s.m.res.New()}}
		}
		rest := fillBins(p, planned, left, worth, align)
		for _, b := range planned {
			if len(b.pods) > 0 {
				bins = append(bins, b)
			}
		}
		if len(rest) == len(left) {
			// Nothing fit a planned bin (a pod larger than the mix's types).
			return append(failed, s.greedy(append(rest, podsOf(bins)...))...)
		}
		left = rest
	}
	bins = emptyBins(p, bins, tmpl, worth, align)
	for _, b := range bins {
		if t := s.holding(p, tmpl, b.used); t >= 0 {
			b.t = t
		}
		failed = append(failed, s.materialize(p, b)...)
	}
	return failed
}

// fillBins fills the bins one at a time, each with pods of the shape (request
// vector) that best matches its room, so that each bin's cpu and memory run
// out together; it returns the pods that fit no bin, in their order.
func fillBins(p *pool, bins []*bin, pods []*podInfo, worth func(resources.Vector) float64, align func(a, b resources.Vector) float64) []*podInfo {
	type shape struct {
		req  resources.Vector
		pods []*podInfo
	}
	var shapes []*shape
	index := map[string]*shape{}
	var key []byte
	for _, pi := range pods {
		key = key[:0]
		for _, a := range pi.req {
			key = appendInt64(key, a)
		}
		sh, ok := index[string(key)]
		if !ok {
			sh = &shape{req: pi.req}
			index[string(key)] = sh
			shapes = append(shapes, sh)
		}
		sh.pods = append(sh.pods, pi)
	}
	room := make(resources.Vector, len(p.largest))
	for _, b := range bins {
		for {
			copy(room, p.effAlloc[b.t])
			room.Sub(b.used)
			var best *shape
			bestAlign := -1.0
			for _, sh := range shapes {
				if len(sh.pods) == 0 || !sh.req.Fits(room) {
					continue
				}
				if al := align(sh.req, room); al > bestAlign+1e-9 || al > bestAlign-1e-9 && best != nil && worth(sh.req) > worth(best.req) {
					best, bestAlign = sh, max(al, bestAlign)
				}
			}
			if best == nil {
				break
			}
			pi := best.pods[0]
			best.pods = best.pods[1:]
			b.used.Add(pi.req)
			b.pods = append(b.pods, pi)
		}
	}
	placed := map[*podInfo]bool{}
	for _, b := range bins {
		for _, pi := range b.pods {
			placed[pi] = true
		}
	}
	var rest []*podInfo
	for _, pi := range pods {
		if !placed[pi] {
			rest = append(rest, pi)
		}
	}
	return rest
}

func podsOf(bins []*bin) []*podInfo {
	var out []*podInfo
	for _, b := range bins {
		out = append(out, b.pods...)
	}
	return out
}

// bestBin returns the bin with room for req whose room is closest to it in
// shape (the least room left on ties), or nil.
func bestBin(p *pool, bins []*bin, req resources.Vector, worth func(resources.Vector) float64, align func(a, b resources.Vector) float64) *bin {
	var best *bin
	bestAlign, bestLeft := -1.0, math.Inf(1)
	room := make(resources.Vector, len(req))
	for _, b := range bins {
		copy(room, p.effAlloc[b.t])
		room.Sub(b.used)
		if !req.Fits(room) {
			continue
		}
		al, l := align(req, room), worth(room)-worth(req)
		if al > bestAlign+1e-3 || al > bestAlign-1e-3 && l < bestLeft {
			best, bestAlign, bestLeft = b, max(al, bestAlign), l
		}
	}
	return best
}

// emptyBins empties bins into the others' room, trying the least efficient
// bins (price per worth of what they hold) first.
func emptyBins(p *pool, bins []*bin, tmpl *claim, worth func(resources.Vector) float64, align func(a, b resources.Vector) float64) []*bin {
	eff := func(b *bin) float64 {
		return p.price(b.t, tmpl.pairs, tmpl.allPairs) / max(worth(b.used), 1e-12)
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
			b := bestBin(p, others, pi.req, worth, align)
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

// holding returns the cheapest type of a template claim with room for
// requests, or -1.
func (s *solve) holding(p *pool, tmpl *claim, requests resources.Vector) int {
	set := s.scratch(&s.maskBuf, p.nt)
	set.CopyFrom(tmpl.reqMask)
	p.fitMask(set, requests)
	t, _ := s.cheapestIn(p, tmpl.pairs, tmpl.allPairs, set)
	return t
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
