package simulator

import (
	"cmp"
	"math"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// How claims are sized. Placing a pod into room a claim already pays for is
// free; otherwise the pod either grows an open claim into a larger type or
// opens a new one. Greedily taking the smaller price increase packs a
// catalogue whose prices are proportional to size well (the reference
// benchmark), but on a real catalogue it grows claims into the largest,
// least efficient types or opens tiny ones. So each claim has a target type,
// chosen for its price per unit of the demand still uncovered, and growth is
// weighed by the efficiency of the type it leads to.

// efficiencyMargin is how much more efficient a type must be than the
// cheapest fitting one to be chosen as a target instead: larger targets are
// only worth it when they are clearly cheaper per unit.
const efficiencyMargin = 0.10

// growthTolerance lets growing an open claim win over opening a new one of
// nearly equal efficiency, so that plans do not use more nodes than needed.
const growthTolerance = 0.02

// uncovered returns the cpu and memory the pending pods request beyond the
// room already open (0 for a resource the open room covers), and whether any
// is left.
func (s *solve) uncovered() (cpu, mem float64, ok bool) {
	cpu = max(float64(s.demand[resources.CPU]-s.slackSum[resources.CPU]), 0)
	mem = max(float64(s.demand[resources.Memory]-s.slackSum[resources.Memory]), 0)
	return cpu, mem, cpu > 0 || mem > 0
}

// Resource prices. Buying cpu and memory in fractions of a pool's types at
// their cheapest offerings, a dollar buys any point of the convex hull of the
// types' (cpu, memory) per dollar, less anything (waste is free). For the
// demand still uncovered, the cheapest mix is where the demand's direction
// leaves that hull; the supporting line there gives a price per millicore and
// per byte (the linear program's duals) at which the best types cost exactly
// what they offer and every other type costs more. Claims are sized and grown
// by comparing what a choice costs with what the room it adds is worth.

// hullPoint is a type's allocatable cpu and memory (c, m) and the same per
// dollar (x, y).
type hullPoint struct {
	x, y float64
	c, m float64
	t    int // the type
}

// buildHull computes the upper-right convex hull of the viable types'
// capacity per dollar, from most memory per dollar to most cpu per dollar.
func buildHull(p *pool) []hullPoint {
	var pts []hullPoint
	for t := p.viable.First(); t >= 0; t = p.viable.Next(t + 1) {
		a := p.effAlloc[t]
		if pt, ok := newHullPoint(t, float64(a[resources.CPU]), float64(a[resources.Memory]), p.minPrice[t]); ok {
			pts = append(pts, pt)
		}
	}
	return upperHull(pts)
}

func newHullPoint(t int, c, m, price float64) (hullPoint, bool) {
	if price <= 0 || math.IsInf(price, 1) {
		return hullPoint{}, false
	}
	return hullPoint{x: c / price, y: m / price, c: c, m: m, t: t}, true
}

// clippedHull is the hull of the capacity per dollar of the types in set,
// each type's capacity clipped (clip) to what pods whose memory per cpu lies
// between lo and hi can fill. buf is scratch for the points; it is returned
// for reuse.
func clippedHull(p *pool, set bitset.Set, price func(int) float64, lo, hi float64, buf []hullPoint) (hull, _ []hullPoint) {
	if n := set.Count(); cap(buf) < n {
		buf = make([]hullPoint, 0, n)
	}
	pts := buf[:0]
	for t := set.First(); t >= 0; t = set.Next(t + 1) {
		a := p.effAlloc[t]
		c, m := clip(float64(a[resources.CPU]), float64(a[resources.Memory]), lo, hi)
		if pt, ok := newHullPoint(t, c, m, price(t)); ok {
			pts = append(pts, pt)
		}
	}
	return upperHull(pts), pts
}

// clip returns how much of cpu c and memory m pods whose memory per cpu lies
// between lo and hi can fill, however they are mixed: no more cpu than m/lo,
// no more memory than c×hi. Without the clip a compute-optimised type whose
// shape no pod has looks cheapest, and every such node strands cpu.
func clip(c, m, lo, hi float64) (float64, float64) {
	if lo > 0 && !math.IsInf(lo, 1) {
		c = min(c, m/lo)
	}
	if hi > 0 && !math.IsInf(hi, 1) {
		m = min(m, c*hi)
	}
	return c, m
}

// widen extends the range [lo, hi] of memory per cpu to a request's.
func widen(lo, hi float64, req resources.Vector) (float64, float64) {
	c, m := float64(req[resources.CPU]), float64(req[resources.Memory])
	switch {
	case c <= 0 && m <= 0:
	case c <= 0:
		hi = math.Inf(1)
	case m <= 0:
		lo = 0
	default:
		lo, hi = min(lo, m/c), max(hi, m/c)
	}
	return lo, hi
}

// upperHull returns the part of the points' convex hull that no other point
// dominates, from the highest y to the highest x. It reorders pts.
func upperHull(pts []hullPoint) []hullPoint {
	if len(pts) == 0 {
		return nil
	}
	slices.SortFunc(pts, func(a, b hullPoint) int {
		return cmp.Or(cmp.Compare(a.x, b.x), cmp.Compare(b.y, a.y), cmp.Compare(a.t, b.t))
	})
	// Monotone chain for the upper hull, then keep the part from the highest
	// y to the highest x: the rest is dominated.
	var hull []hullPoint
	for _, q := range pts {
		for len(hull) >= 2 {
			a, b := hull[len(hull)-2], hull[len(hull)-1]
			if (b.x-a.x)*(q.y-a.y)-(b.y-a.y)*(q.x-a.x) >= 0 {
				hull = hull[:len(hull)-1]
				continue
			}
			break
		}
		hull = append(hull, q)
	}
	top := 0
	for i, q := range hull {
		if q.y > hull[top].y || q.y == hull[top].y && q.x > hull[top].x {
			top = i
		}
	}
	return hull[top:]
}

// resourcePrices returns the price per millicore and per byte that the
// pool's hull implies for demand in the direction (cpu, mem).
func resourcePrices(hull []hullPoint, cpu, mem float64) (pc, pm float64) {
	if len(hull) == 0 {
		return 0, 0
	}
	first, last := hull[0], hull[len(hull)-1]
	switch {
	case cpu <= 0 && mem <= 0:
		return 0, 0
	case cpu <= 0 || mem/cpu >= first.y/first.x:
		return 0, 1 / first.y // memory binds: the most memory per dollar
	case mem <= 0 || mem/cpu <= last.y/last.x:
		return 1 / last.x, 0 // cpu binds: the most cpu per dollar
	}
	for i := 1; i < len(hull); i++ {
		a, b := hull[i-1], hull[i]
		if mem/cpu >= b.y/b.x {
			det := a.x*b.y - b.x*a.y
			if det == 0 {
				break
			}
			return (b.y - a.y) / det, (a.x - b.x) / det
		}
	}
	return 1 / last.x, 0
}

// lpMix returns the cheapest fractional mix of at most two of the hull's
// types covering cpu and mem: type a in amount xa and type b (or -1) in
// amount xb.
func lpMix(hull []hullPoint, cpu, mem float64) (a int, xa float64, b int, xb float64) {
	if len(hull) == 0 || cpu <= 0 && mem <= 0 {
		return -1, 0, -1, 0
	}
	single := func(h hullPoint) (int, float64, int, float64) {
		return h.t, max(cpu/h.c, mem/h.m), -1, 0
	}
	first, last := hull[0], hull[len(hull)-1]
	switch {
	case cpu <= 0 || mem/cpu >= first.y/first.x:
		return single(first)
	case mem <= 0 || mem/cpu <= last.y/last.x:
		return single(last)
	}
	for i := 1; i < len(hull); i++ {
		ha, hb := hull[i-1], hull[i]
		if mem/cpu >= hb.y/hb.x {
			det := ha.c*hb.m - hb.c*ha.m
			if det == 0 {
				return single(ha)
			}
			xa = (cpu*hb.m - hb.c*mem) / det
			xb = (ha.c*mem - cpu*ha.m) / det
			return ha.t, max(xa, 0), hb.t, max(xb, 0)
		}
	}
	return single(last)
}

// valuer prices capacity for the current uncovered demand; capacity beyond
// that demand is worth nothing.
type valuer struct{ pc, pm, cpu, mem float64 }

func (s *solve) valuer(p *pool) (valuer, bool) {
	cpu, mem, ok := s.uncovered()
	if !ok {
		return valuer{}, false
	}
	pc, pm := resourcePrices(p.hull, cpu, mem)
	return valuer{pc, pm, cpu, mem}, pc > 0 || pm > 0
}

func (v valuer) value(cpu, mem float64) float64 {
	return v.pc*min(max(cpu, 0), v.cpu) + v.pm*min(max(mem, 0), v.mem)
}

// packed is the cpu and memory of capacity that whole pods the size of req use.
func packed(capacity, req resources.Vector) (cpu, mem float64) {
	n := math.Inf(1)
	for d, r := range req {
		if r > 0 {
			n = min(n, math.Floor(float64(capacity[d])/float64(r)))
		}
	}
	if math.IsInf(n, 1) || n < 1 {
		return float64(capacity[resources.CPU]), float64(capacity[resources.Memory])
	}
	return n * float64(req[resources.CPU]), n * float64(req[resources.Memory])
}

// chooseTarget picks the type a new claim is filled up to, among the plan's
// options: the one whose price is lowest against the worth of the room that
// pods like req can use, if it beats the cheapest option by efficiencyMargin
// and the pending demand can fill it (while pods that each need a node of
// their own are still to come, a claim is sized for its share of the demand).
func (s *solve) chooseTarget(p *pool, plan *addPlan, pi *podInfo) {
	req := pi.req
	val, ok := s.valuer(p)
	// Open room may be out of the pod's reach (another zone, say): pods
	// like it still to come are demand too, shared among the domains their
	// spread constraints balance over.
	if left := s.sigLeft[pi.sig]; left != nil {
		k := float64(s.spreadDomains(pi))
		cpu, mem := float64(left[resources.CPU])/k, float64(left[resources.Memory])/k
		if cpu > val.cpu || mem > val.mem {
			val.cpu, val.mem = max(val.cpu, cpu), max(val.mem, mem)
			if !ok {
				val.pc, val.pm = resourcePrices(p.hull, val.cpu, val.mem)
				ok = val.pc > 0 || val.pm > 0
			}
		}
	}
	if !ok {
		return
	}
	share := float64(max(s.ownNodeLeft, 1))
	limitCPU := float64(req[resources.CPU]) + val.cpu/share
	limitMem := float64(req[resources.Memory]) + val.mem/share
	score := func(t int, price float64) float64 {
		return price / val.value(packed(p.effAlloc[t], req))
	}
	best, bestPrice := plan.target, plan.price
	bestScore := score(best, bestPrice) * (1 - efficiencyMargin)
	for t := plan.options.First(); t >= 0; t = plan.options.Next(t + 1) {
		a := p.effAlloc[t]
		if float64(a[resources.CPU]) > limitCPU || float64(a[resources.Memory]) > limitMem {
			continue
		}
		price := p.price(t, plan.pairs, plan.allPairs)
		if sc := score(t, price); sc < bestScore {
			best, bestPrice, bestScore = t, price, sc
		}
	}
	plan.target, plan.price = best, bestPrice
}

// spreadDomains returns how many domains the pod's zone-like spread
// constraints balance over (1 without any).
func (s *solve) spreadDomains(pi *podInfo) int {
	v := pi.sig.views[pi.level]
	k := 1
	for _, g := range v.groups {
		if g.hostname {
			continue
		}
		for _, r := range g.refs {
			if r.role == roleSpread {
				k = max(k, len(s.eligibleFor(v, s.tg(r.tg))))
			}
		}
	}
	return k
}

// preferGrowth reports whether growing claim c per grow is better than
// opening a new claim per fresh for a pod of size req. While demand is left,
// it compares price against worth: the price increase against the room
// growth adds, the new claim's price against its room (growth wins near
// ties, keeping nodes few). Otherwise the smaller bill wins.
func (s *solve) preferGrowth(c *claim, grow, fresh *addPlan, req resources.Vector) bool {
	delta := grow.price - c.price
	val, ok := s.valuer(c.pool)
	if !ok {
		return delta <= fresh.price*(1+1e-9)
	}
	old, next := c.pool.effAlloc[c.target], c.pool.effAlloc[grow.target]
	added := val.value(float64(next[resources.CPU]-old[resources.CPU]), float64(next[resources.Memory]-old[resources.Memory]))
	room := val.value(packed(fresh.pool.effAlloc[fresh.target], req))
	if added <= 0 || room <= 0 {
		return delta <= fresh.price*(1+1e-9)
	}
	return delta/added <= fresh.price/room*(1+growthTolerance)
}
