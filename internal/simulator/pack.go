package simulator

import (
	"cmp"
	"math"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// packer packs the generic pods of one NodePool on plain vectors, before any
// claim exists (see binPack). Pods with the same requests are one shape; a
// bin is a claim-to-be of one instance type.
type packer struct {
	s    *solve
	p    *pool
	tmpl *claim // the pool's template claim: the types and offerings allowed

	shapes   []*shape
	pc, pm   float64 // worth of a millicore and of a byte (see resourcePrices)
	cpu, mem float64 // the whole demand, to compare shapes (align)
	dims     []int   // resource dimensions some pod requests

	hulls map[[2]float64][]hullPoint // per range of memory per cpu (hullFor)
	room  resources.Vector           // scratch
	rest  resources.Vector           // scratch
	took  []int                      // scratch: per shape, pods a fill takes
	tries []fillTry                  // scratch (bestFill)
	cands []int                      // candidates, once computed
}

// shape is the pods of one request vector not packed yet, in placement order.
type shape struct {
	req    resources.Vector
	worth  float64
	ux, uy float64 // req's direction in the plane of align, as a unit vector
	pods   []*podInfo
}

// bin is a claim-to-be of a bulk pack: a type and the pods in it.
type bin struct {
	t    int
	used resources.Vector
	pods []*podInfo
}

// maxPackRounds bounds the rounds guided by the fractional mix; what is left
// after them (normally less than one bin of each type of the mix) goes to
// the tail (packer.tail).
const maxPackRounds = 16

func (s *solve) newPacker(p *pool, tmpl *claim, pods []*podInfo) *packer {
	pk := &packer{s: s, p: p, tmpl: tmpl, room: s.m.res.New(), rest: s.m.res.New(), hulls: map[[2]float64][]hullPoint{}}
	for _, pi := range pods {
		pk.cpu += float64(pi.req[resources.CPU])
		pk.mem += float64(pi.req[resources.Memory])
	}
	pk.pc, pk.pm = resourcePrices(pk.hull(pods), pk.cpu, pk.mem)
	slices.SortStableFunc(pods, func(a, b *podInfo) int { return cmp.Compare(pk.worth(b.req), pk.worth(a.req)) })
	index := map[string]*shape{}
	var key []byte
	requested := make([]bool, s.m.res.Len())
	for _, pi := range pods {
		key = key[:0]
		for d, a := range pi.req {
			key = appendInt64(key, a)
			requested[d] = requested[d] || a > 0
		}
		sh, ok := index[string(key)]
		if !ok {
			sh = &shape{req: pi.req, worth: pk.worth(pi.req)}
			sh.ux, sh.uy = pk.unit(pi.req)
			index[string(key)] = sh
			pk.shapes = append(pk.shapes, sh)
		}
		sh.pods = append(sh.pods, pi)
	}
	for d, r := range requested {
		if r {
			pk.dims = append(pk.dims, d)
		}
	}
	pk.took = make([]int, len(pk.shapes))
	return pk
}

func (pk *packer) worth(v resources.Vector) float64 {
	return pk.pc*float64(v[resources.CPU]) + pk.pm*float64(v[resources.Memory])
}

// align is the cosine of the angle between a and b in the (cpu, memory)
// plane, each resource scaled by the whole demand for it.
func (pk *packer) align(a, b resources.Vector) float64 {
	ax, ay := pk.unit(a)
	bx, by := pk.unit(b)
	return ax*bx + ay*by
}

// unit is v's direction in the plane of align, as a unit vector (0 for a
// vector without cpu and memory).
func (pk *packer) unit(v resources.Vector) (float64, float64) {
	x, y := float64(v[resources.CPU])/max(pk.cpu, 1), float64(v[resources.Memory])/max(pk.mem, 1)
	n := math.Hypot(x, y)
	if n == 0 {
		return 0, 0
	}
	return x / n, y / n
}

func (pk *packer) price(t int) float64 { return pk.p.price(t, pk.tmpl.pairs, pk.tmpl.allPairs) }

// hull is the hull (clippedHull) of the types the template allows, clipped
// to the shapes of the given pods. Hulls are cached per shape range.
func (pk *packer) hull(pods []*podInfo) []hullPoint {
	lo, hi := math.Inf(1), 0.0
	for _, pi := range pods {
		lo, hi = widen(lo, hi, pi.req)
	}
	return pk.hullFor(lo, hi)
}

func (pk *packer) hullFor(lo, hi float64) []hullPoint {
	key := [2]float64{lo, hi}
	if h, ok := pk.hulls[key]; ok {
		return h
	}
	h, buf := clippedHull(pk.p, pk.tmpl.reqMask, pk.price, lo, hi, pk.s.hullBuf)
	pk.s.hullBuf = buf
	pk.hulls[key] = h
	return h
}

// restShape returns the range of memory per cpu of the pods left after the
// last fill (packer.took), and their cpu and memory.
func (pk *packer) restShape() (lo, hi, cpu, mem float64) {
	lo, hi = math.Inf(1), 0
	for i, sh := range pk.shapes {
		if n := float64(len(sh.pods) - pk.took[i]); n > 0 {
			lo, hi = widen(lo, hi, sh.req)
			cpu += n * float64(sh.req[resources.CPU])
			mem += n * float64(sh.req[resources.Memory])
		}
	}
	return lo, hi, cpu, mem
}

// restCost estimates what the pods left after the last fill (packer.took)
// will cost: with whole set, the price of the cheapest type that holds them
// all if there is one (what the last bin will cost); otherwise their
// fractional lower bound (the least spend on the template's types, clipped
// to those pods' shapes, that covers their cpu and memory).
func (pk *packer) restCost(whole bool) float64 {
	lo, hi := math.Inf(1), 0.0
	rest := pk.rest
	clear(rest)
	for i, sh := range pk.shapes {
		if n := len(sh.pods) - pk.took[i]; n > 0 {
			lo, hi = widen(lo, hi, sh.req)
			for d, a := range sh.req {
				rest[d] += int64(n) * a
			}
		}
	}
	if rest.IsZero() {
		return 0
	}
	if whole {
		if t := pk.s.holding(pk.p, pk.tmpl, rest); t >= 0 {
			return pk.price(t)
		}
	}
	a, xa, b, xb := lpMix(pk.hullFor(lo, hi), float64(rest[resources.CPU]), float64(rest[resources.Memory]))
	cost := 0.0
	if a >= 0 {
		cost += xa * pk.price(a)
	}
	if b >= 0 {
		cost += xb * pk.price(b)
	}
	return cost
}

// left returns the pods not packed yet.
func (pk *packer) left() []*podInfo {
	var out []*podInfo
	for _, sh := range pk.shapes {
		out = append(out, sh.pods...)
	}
	return out
}

// fill works out which pods a bin of type t already holding used takes: one
// at a time, the shape (request vector) best aligned with the room left,
// the larger on ties, so that the bin's cpu and memory run out together.
// It leaves the count per shape in pk.took and returns their worth.
func (pk *packer) fill(t int, used resources.Vector) float64 {
	room := pk.room
	copy(room, pk.p.effAlloc[t])
	room.Sub(used)
	clear(pk.took)
	worth := 0.0
	for {
		best, bestAlign := -1, -1.0
		rx, ry := pk.unit(room)
		for i, sh := range pk.shapes {
			if pk.took[i] >= len(sh.pods) || !sh.req.Fits(room) {
				continue
			}
			if al := sh.ux*rx + sh.uy*ry; al > bestAlign+1e-9 || al > bestAlign-1e-9 && best >= 0 && sh.worth > pk.shapes[best].worth {
				best, bestAlign = i, max(al, bestAlign)
			}
		}
		if best < 0 {
			return worth
		}
		pk.took[best]++
		room.Sub(pk.shapes[best].req)
		worth += pk.shapes[best].worth
	}
}

// take moves the pods of the last fill into bin b and returns how many.
func (pk *packer) take(b *bin) int {
	n := 0
	for i, sh := range pk.shapes {
		k := pk.took[i]
		for _, pi := range sh.pods[:k] {
			b.used.Add(pi.req)
			b.pods = append(b.pods, pi)
		}
		sh.pods = sh.pods[k:]
		n += k
	}
	return n
}

// rounds packs while the fractional mix of the pods left holds whole bins:
// it takes the cheapest mix of (at most two) types covering their cpu and
// memory (hull), plans the whole number of bins of each type in it and fills
// them. Pods that fit no planned bin start the next round.
func (pk *packer) rounds() []*bin {
	var bins []*bin
	for range maxPackRounds {
		left := pk.left()
		if len(left) == 0 {
			break
		}
		var cpu, mem float64
		for _, pi := range left {
			cpu += float64(pi.req[resources.CPU])
			mem += float64(pi.req[resources.Memory])
		}
		a, xa, b, xb := lpMix(pk.hull(left), cpu, mem)
		var planned []int
		for range int(xa) {
			planned = append(planned, a)
		}
		for range int(xb) {
			planned = append(planned, b)
		}
		placed := 0
		for _, t := range planned {
			b := &bin{t: t, used: pk.s.m.res.New()}
			pk.fill(t, b.used)
			if n := pk.take(b); n > 0 {
				bins = append(bins, b)
				placed += n
			}
		}
		if placed == 0 {
			break
		}
	}
	return bins
}

// finish packs the pods the rounds left (tail) twice, estimating the rest's
// cost with and without whole bins, and keeps the cheaper outcome (after
// each bin takes the cheapest type that holds it); on a tie, the one with
// fewer bins. Whole-bin estimates see that the last few pods cost a whole
// bin; fractional ones see further ahead. Neither wins everywhere.
func (pk *packer) finish(bins []*bin) []*bin {
	start := pk.save()
	var best []*bin
	var bestState [][]*podInfo
	bestCost, bestLeft := math.Inf(1), math.MaxInt
	for _, whole := range []bool{true, false} {
		pk.restore(start)
		got := pk.tail(whole)
		cost, left := 0.0, len(pk.left())
		for _, b := range got {
			t := pk.s.holding(pk.p, pk.tmpl, b.used)
			if t < 0 {
				t = b.t
			}
			cost += pk.price(t)
		}
		if left < bestLeft || left == bestLeft && (cost < bestCost-1e-9 || cost <= bestCost+1e-9 && len(got) < len(best)) {
			best, bestState, bestCost, bestLeft = got, pk.save(), cost, left
		}
	}
	pk.restore(bestState)
	return append(bins, best...)
}

// save returns which pods are not packed yet, per shape; restore goes back
// to such a state.
func (pk *packer) save() [][]*podInfo {
	state := make([][]*podInfo, len(pk.shapes))
	for i, sh := range pk.shapes {
		state[i] = sh.pods
	}
	return state
}

func (pk *packer) restore(state [][]*podInfo) {
	for i, sh := range pk.shapes {
		sh.pods = state[i]
	}
}

// tail packs the pods the rounds left, one bin at a time. Of the types no
// other allowed type beats on price and room (candidates), it takes the one
// whose bin, with what it leaves, costs least more than what is left now,
// per worth taken: (price + restCost after - restCost before) / worth. The
// rest's cost counts because a bin that is cheap for what it takes but
// leaves pods that pack badly (all cpu-heavy, say, or a few that need a
// bin of their own) is not cheap. Near the end this is the cheapest type
// that holds everything left, unless two bins cost less. On near ties the
// bin taking more wins, for fewer nodes. It stops when no type takes a pod.
func (pk *packer) tail(whole bool) []*bin {
	var bins []*bin
	cands := pk.candidates()
	empty := pk.s.m.res.New()
	for len(pk.left()) > 0 {
		clear(pk.took)
		before := pk.restCost(whole)
		best, bestScore, bestWorth := -1, math.Inf(1), 0.0
		for _, t := range cands {
			w := pk.fill(t, empty)
			if w <= 0 {
				continue
			}
			rest := pk.restCost(whole)
			sc := (pk.price(t) + rest - before) / w
			if sc < bestScore-1e-6 || sc <= bestScore+1e-6 && w > bestWorth {
				best, bestScore, bestWorth = t, sc, w
			}
			if rest == 0 && pk.tookAll() {
				break // it takes every pod: dearer types (later) cannot do better
			}
		}
		if best < 0 {
			break
		}
		b := &bin{t: best, used: pk.s.m.res.New()}
		pk.fill(best, b.used)
		if pk.take(b) == 0 {
			break
		}
		bins = append(bins, b)
	}
	return bins
}

// candidates returns the types the template allows that no other allowed
// type matches in every requested resource for no more money, cheapest first.
func (pk *packer) candidates() []int {
	if pk.cands == nil {
		pk.cands = pk.undominated(pk.tmpl.reqMask, pk.price)
	}
	return pk.cands
}

// tookAll reports whether the last fill took every pod left.
func (pk *packer) tookAll() bool {
	for i, sh := range pk.shapes {
		if pk.took[i] < len(sh.pods) {
			return false
		}
	}
	return true
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
