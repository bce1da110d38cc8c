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

// binPack packs generic pods onto new claims of pool p, guided by the
// fractional lower bound: for the pods left, it takes the cheapest mix of
// (at most two) types that covers their cpu and memory, plans the whole
// number of claims of each type that mix contains, and fills them, largest
// pods first, each into the planned claim closest to it in shape. Pods that
// do not fit start the next round. When the mix is less than one claim, one
// claim of the cheapest type that holds them all (or fits the pod) takes
// the rest. A claim ends up on the cheapest type its pods fit.
func (s *solve) binPack(p *pool, pods []*podInfo) []*podInfo {
	var cpu, mem float64
	for _, pi := range pods {
		cpu += float64(pi.req[resources.CPU])
		mem += float64(pi.req[resources.Memory])
	}
	pc, pm := resourcePrices(p.hull, cpu, mem)
	worth := func(v resources.Vector) float64 {
		return pc*float64(v[resources.CPU]) + pm*float64(v[resources.Memory])
	}
	// align measures how well a pod's shape matches room's: the cosine of
	// their (cpu, memory) vectors scaled by the total demand.
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

	var failed []*podInfo
	left := pods
	for round := 0; len(left) > 0; round++ {
		total := s.m.res.New()
		for _, pi := range left {
			total.Add(pi.req)
		}
		var planned []int // types of the claims to fill this round
		a, xa, b, xb := lpMix(p, float64(total[resources.CPU]), float64(total[resources.Memory]))
		for range int(xa) {
			planned = append(planned, a)
		}
		for range int(xb) {
			planned = append(planned, b)
		}
		if len(planned) == 0 || round >= 16 {
			// Less than a claim's worth left: one claim for all that fit.
			left, failed = s.packTail(p, left, failed)
			continue
		}
		left = s.fillPlanned(p, left, planned, worth, align)
	}
	return failed
}

// fillPlanned fills claims of the planned types with pods (largest first),
// each into the open or planned claim closest to it in shape, and returns the
// pods that fit none.
func (s *solve) fillPlanned(p *pool, pods []*podInfo, planned []int, worth func(resources.Vector) float64, align func(a, b resources.Vector) float64) []*podInfo {
	bins := make([]*claim, len(planned))
	var rest []*podInfo
	for _, pi := range pods {
		v := pi.sig.views[pi.level]
		best, bestAlign, bestLeft := -1, -1.0, math.Inf(1)
		for i, t := range planned {
			room := p.effAlloc[t]
			if bins[i] != nil {
				room = bins[i].slack
			}
			if !pi.req.Fits(room) {
				continue
			}
			al, l := align(pi.req, room), worth(room)-worth(pi.req)
			if al > bestAlign+1e-3 || al > bestAlign-1e-3 && l < bestLeft {
				best, bestAlign, bestLeft = i, max(al, bestAlign), l
			}
		}
		if best < 0 || !s.placeInBin(p, pi, v, bins, planned, best) {
			rest = append(rest, pi)
		}
	}
	return rest
}

// placeInBin puts a pod into planned claim i, opening it if needed.
func (s *solve) placeInBin(p *pool, pi *podInfo, v *podView, bins []*claim, planned []int, i int) bool {
	if c := bins[i]; c != nil {
		plan, ok := s.tryClaim(c, pi, v)
		if !ok || plan.target != c.target {
			return false
		}
		s.commitClaim(c, pi, v, &plan)
		return true
	}
	if s.claimsCap >= 0 && len(s.claims) >= s.claimsCap {
		return false
	}
	tmpl := s.fresh(p)
	plan, ok := s.tryClaim(tmpl, pi, v)
	if !ok || !plan.options.Has(planned[i]) {
		return false
	}
	plan.target, plan.price = planned[i], p.price(planned[i], plan.pairs, plan.allPairs)
	c := s.openClaim(tmpl)
	s.commitClaim(c, pi, v, &plan)
	bins[i] = c
	return true
}

// packTail places the last pods: each onto a claim of the cheapest type that
// holds all the pods left (or, failing that, the pod), filling it first.
func (s *solve) packTail(p *pool, pods, failed []*podInfo) ([]*podInfo, []*podInfo) {
	if len(pods) == 0 {
		return nil, failed
	}
	all := s.m.res.New()
	for _, pi := range pods {
		all.Add(pi.req)
	}
	pi := pods[0]
	v := pi.sig.views[pi.level]
	if s.claimsCap >= 0 && len(s.claims) >= s.claimsCap {
		return nil, append(failed, pods...)
	}
	tmpl := s.fresh(p)
	plan, ok := s.tryClaim(tmpl, pi, v)
	if !ok {
		return pods[1:], append(failed, pi)
	}
	if t := s.holdsAll(p, &plan, all); t >= 0 {
		plan.target, plan.price = t, p.price(t, plan.pairs, plan.allPairs)
	}
	c := s.openClaim(tmpl)
	s.commitClaim(c, pi, v, &plan)
	var rest []*podInfo
	for _, q := range pods[1:] {
		qv := q.sig.views[q.level]
		if q.req.Fits(c.slack) {
			if plan, ok := s.tryClaim(c, q, qv); ok && plan.target == c.target {
				s.commitClaim(c, q, qv, &plan)
				continue
			}
		}
		rest = append(rest, q)
	}
	return rest, failed
}

// holdsAll returns the cheapest of the plan's options with room for all of
// requests, or -1.
func (s *solve) holdsAll(p *pool, plan *addPlan, requests resources.Vector) int {
	set := s.scratch(&s.maskBuf, p.nt)
	set.CopyFrom(plan.options)
	p.fitMask(set, requests)
	t, _ := s.cheapestIn(p, plan.pairs, plan.allPairs, set)
	return t
}
