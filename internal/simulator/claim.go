package simulator

import (
	"cmp"
	"math"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// claim is a NodeClaim this solve opened: the requirements its pods
// accumulated and the instance types still able to run them all.
type claim struct {
	id   int32
	loc  int32 // location id: len(nodes) + id
	pool *pool

	reqs     creqs      // the pool's requirements narrowed by pods and topology
	pairs    bitset.Set // offering pairs reqs allow
	allPairs bool
	reqMask  bitset.Set       // types reqs, offerings, limits and price cap allow
	options  bitset.Set       // reqMask types with room for requests
	requests resources.Vector // the pods' requests (daemonsets are in the types' effAlloc)
	maxAlloc resources.Vector // an upper bound of effAlloc over reqMask
	cheapest int              // the cheapest type that fits the pods
	target   int              // the type the claim is being filled up to
	price    float64          // the target's price
	slack    resources.Vector // room left in the target

	pods     []*podInfo
	ports    []hostPort
	reserved resources.Vector // capacity held against the pool's limits
	relaxed  bool             // minValues relaxed (BestEffort)
	version  int              // pool-state version a template was built at
}

// addPlan is the outcome of checking a pod against a claim: what the claim
// becomes if the pod is added.
type addPlan struct {
	pool     *pool
	reqs     creqs
	pairs    bitset.Set
	allPairs bool
	reqMask  bitset.Set
	options  bitset.Set
	cheapest int
	target   int
	price    float64 // the target's price
	relaxed  bool
}

// keep detaches the plan from the solve's scratch buffers.
func (p *addPlan) keep() addPlan {
	k := *p
	k.reqMask = p.reqMask.Copy()
	k.options = p.options.Copy()
	return k
}

// domain returns the claim's value for key if it is settled.
func (c *claim) domain(key int32) (int32, bool) {
	if r, ok := c.reqs.get(key); ok {
		return r.single()
	}
	return 0, false
}

// slotFor returns the slot of the claim's domain for a group, if settled.
func (s *solve) claimSlot(c *claim, t *tg) (int32, bool) {
	if t.hostname {
		return c.loc, true
	}
	v, ok := c.domain(t.key)
	if !ok {
		return 0, false
	}
	return s.slotOf(t.key, v), true
}

// keyKnown reports whether nodes of pool p get a value for key: from the
// pool's requirements and labels, the instance types, the offerings, or
// because it is a well-known label the provider sets.
func (m *Model) keyKnown(keys *interner, p *pool, key int32) bool {
	if key == m.zoneKey || key == m.ctKey {
		return true
	}
	if _, ok := p.typeKeys[key]; ok {
		return true
	}
	if _, ok := p.base.get(key); ok {
		return true
	}
	return requirements.IsWellKnown(keys.str(key))
}

// mergeForPool returns reqs AND alt for a node of pool p.
func (m *Model) mergeForPool(vals *interner, p *pool, reqs, alt creqs) (creqs, bool) {
	out, _, bad := m.merge(m.keys, vals, p, reqs, alt)
	return out, bad == nil
}

func (s *solve) merge(p *pool, reqs, alt creqs) (creqs, bool, *creq) {
	return s.m.merge(s.keys, s.vals, p, reqs, alt)
}

// merge returns reqs AND alt for a node of pool p, whether any requirement
// changed, and the requirement that made it fail: one that conflicts, or one
// needing a label nodes of p never get. Hostname and node-name requirements
// can only be met by existing nodes, unless they admit any name.
func (m *Model) merge(keys, vals *interner, p *pool, reqs, alt creqs) (creqs, bool, *creq) {
	changed := false
	for i := range alt {
		r := &alt[i]
		if r.key == m.hostnameKey || r.key == m.nodeNameKey {
			if !r.complement || r.hasGT || r.hasLT {
				return nil, false, r
			}
			continue
		}
		if e, ok := reqs.get(r.key); ok {
			x := intersect(vals, e, r)
			if !x.satisfiable() {
				return nil, false, r
			}
			if !x.equal(e) {
				changed = true
			}
			continue
		}
		if !r.absent && !m.keyKnown(keys, p, r.key) {
			return nil, false, r
		}
		changed = true
	}
	if !changed {
		return reqs, false, nil
	}
	var filtered creqs
	for i := range alt {
		if alt[i].key != m.hostnameKey && alt[i].key != m.nodeNameKey {
			filtered = append(filtered, alt[i])
		}
	}
	return and(vals, reqs, filtered), true, nil
}

// tryClaim checks whether a pod can join claim c and what c becomes if it does.
func (s *solve) tryClaim(c *claim, pi *podInfo, v *podView) (addPlan, bool) {
	p := c.pool
	if !s.poolTolerated(v, p) {
		return addPlan{}, false
	}
	if len(v.sig.ports) > 0 {
		if _, clash := portsConflict(c.ports, v.sig.ports); clash {
			return addPlan{}, false
		}
	}
	if !c.requests.FitsSum(pi.req, c.maxAlloc) {
		return addPlan{}, false
	}
	for _, alt := range v.nodeAlts {
		if plan, ok := s.tryAlt(c, pi, v, alt); ok {
			return plan, true
		}
	}
	return addPlan{}, false
}

func (s *solve) tryAlt(c *claim, pi *podInfo, v *podView, alt creqs) (addPlan, bool) {
	p := c.pool
	reqs, changed, bad := s.merge(p, c.reqs, alt)
	if bad != nil {
		return addPlan{}, false
	}
	// Topology: settle open domains the pod's constraints depend on.
	for gi := range v.groups {
		g := &v.groups[gi]
		if g.hostname {
			if !s.groupAllows(v, g, c.loc) {
				return addPlan{}, false
			}
			continue
		}
		if r, ok := reqs.get(g.key); ok {
			if val, single := r.single(); single {
				if !s.claimAllows(c, v, g, s.slotOf(g.key, val)) {
					return addPlan{}, false
				}
				continue
			}
		}
		val, ok := s.chooseDomain(c, v, g, reqs)
		if !ok {
			if s.onlyCounted(g) && len(s.claimValues(c, g.key, reqs)) == 0 {
				// Nodes of the claim never get the key: the pod is in no
				// domain of it, and no group counts it.
				continue
			}
			return addPlan{}, false
		}
		pinned := creqs{{key: g.key, vals: []int32{val}}}
		reqs = and(s.vals, reqs, pinned)
		changed = true
	}
	if _, open := s.openFilter(pi, p, reqs); open {
		return s.decideFilters(c, pi, v, reqs)
	}
	return s.finishAlt(c, pi, v, reqs, changed)
}

// openFilter finds a spread group counting pi whose node filter
// (nodeAffinityPolicy Honor) a claim of pool p with requirements reqs
// leaves open, and that one requirement decides: the filter is a single
// In requirement on a label new nodes get. It returns that requirement.
// Other filters stay open; their counts are bounded instead
// (countOnClaim).
func (s *solve) openFilter(pi *podInfo, p *pool, reqs creqs) (*creq, bool) {
	for _, id := range pi.sig.selectedBy {
		t := s.tg(id)
		if t.kind != tgSpread || !t.honorAffinity || len(t.filterAlts) != 1 || len(t.filterAlts[0]) != 1 {
			continue
		}
		r := &t.filterAlts[0][0]
		if r.complement || r.absent || r.hasGT || r.hasLT || r.key == s.m.hostnameKey || r.key == s.m.nodeNameKey {
			continue
		}
		if s.claimFilter(t, p, reqs) == filterMaybe {
			return r, true
		}
	}
	return nil, false
}

// decideFilters plans pi onto claim c with requirements reqs once every
// filter openFilter finds is decided, one at a time: the claim narrowed to
// the filter's values or to none of them, whichever plan is cheaper (the
// values on a tie). A pod whose claim may launch on either side of a
// spread's filter (an open capacity type under a spread of on-demand pods,
// say) would count for that spread or not depending on what the cloud
// launches; decided, its count is known. Each step decides at least one
// group, so there are at most two plans per group that counts the pod.
func (s *solve) decideFilters(c *claim, pi *podInfo, v *podView, reqs creqs) (addPlan, bool) {
	var best addPlan
	decided := false
	for {
		r, open := s.openFilter(pi, c.pool, reqs)
		if !open {
			return best, decided
		}
		sides := [2]creq{
			{key: r.key, vals: r.vals},
			{key: r.key, complement: true, absent: true, vals: r.vals},
		}
		var chosen creqs
		for i := range sides {
			narrowed := and(s.vals, reqs, creqs{sides[i]})
			if x, _ := narrowed.get(r.key); !x.satisfiable() {
				continue
			}
			if plan, ok := s.finishAlt(c, pi, v, narrowed, true); ok && (chosen == nil || plan.price < best.price) {
				best, chosen = plan.keep(), narrowed
			}
		}
		if chosen == nil {
			return addPlan{}, false
		}
		reqs, decided = chosen, true
	}
}

// finishAlt completes tryAlt once the requirements reqs are settled: the
// instance types, offerings, limits and price of c with pi added.
func (s *solve) finishAlt(c *claim, pi *podInfo, v *podView, reqs creqs, changed bool) (addPlan, bool) {
	p := c.pool
	plan := addPlan{pool: p, reqs: reqs, pairs: c.pairs, allPairs: c.allPairs, reqMask: c.reqMask}
	if changed {
		plan.reqMask = s.narrowMask(c, reqs, &plan)
		if plan.reqMask.Empty() {
			return addPlan{}, false
		}
	}
	// Host ports: the types whose daemons bind one of the pod's ports are
	// out of the claim.
	if len(v.sig.ports) > 0 {
		if taken := daemonPortTypes(p, v.sig.ports, &s.portBuf); taken != nil && plan.reqMask.Intersects(taken) {
			if !changed {
				mask := s.scratch(&s.maskBuf, p.nt)
				mask.CopyFrom(c.reqMask)
				plan.reqMask = mask
			}
			plan.reqMask.AndNot(taken)
			if plan.reqMask.Empty() {
				return addPlan{}, false
			}
		}
	}
	sum := s.sumBuf
	copy(sum, c.requests)
	sum.Add(pi.req)
	opts := s.scratch(&s.optBuf, p.nt)
	opts.CopyFrom(plan.reqMask)
	p.fitMask(opts, sum)
	if opts.Empty() {
		return addPlan{}, false
	}
	s.withinLimits(c, opts)
	if opts.Empty() {
		return addPlan{}, false
	}
	plan.options = opts
	if !s.minValuesOK(p, opts, &plan) {
		return addPlan{}, false
	}
	plan.cheapest, plan.price = s.cheapestIn(p, plan.pairs, plan.allPairs, opts)
	if plan.cheapest < 0 || (s.priceCap > 0 && plan.price >= s.priceCap) {
		return addPlan{}, false
	}
	// A claim keeps its target type while the pods fit it; its cost is the
	// target's price. Otherwise it grows into the cheapest type that fits.
	plan.target = plan.cheapest
	if c.target >= 0 && opts.Has(c.target) {
		plan.target, plan.price = c.target, p.price(c.target, plan.pairs, plan.allPairs)
	}
	return plan, true
}

func (s *solve) scratch(buf *bitset.Set, n int) bitset.Set {
	if w := bitset.Words(n); cap(*buf) < w {
		*buf = bitset.New(n)
	} else {
		*buf = (*buf)[:w]
	}
	return *buf
}

// narrowMask recomputes the instance types the new requirements allow.
func (s *solve) narrowMask(c *claim, reqs creqs, plan *addPlan) bitset.Set {
	p := c.pool
	mask := s.scratch(&s.maskBuf, p.nt)
	mask.CopyFrom(c.reqMask)
	for i := range reqs {
		r := &reqs[i]
		old, had := c.reqs.get(r.key)
		if had && old.equal(r) {
			continue
		}
		if kb := p.typeKeys[r.key]; kb != nil {
			mask.And(s.keyMask(p, kb, r))
		}
	}
	zr, _ := reqs.get(s.m.zoneKey)
	cr, _ := reqs.get(s.m.ctKey)
	oz, _ := c.reqs.get(s.m.zoneKey)
	oc, _ := c.reqs.get(s.m.ctKey)
	if !sameReq(zr, oz) || !sameReq(cr, oc) {
		plan.pairs = s.m.allowedPairs(p, reqs)
		plan.allPairs = plan.pairs.Count() == len(p.pairZone)
		mask.And(s.offerings(p, plan.pairs))
	}
	return mask
}

func sameReq(a, b *creq) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.equal(b)
}

// keyMask is Model.keyMask with a per-solve cache.
func (s *solve) keyMask(p *pool, kb *keyBits, r *creq) bitset.Set {
	buf := s.keyBuf[:0]
	buf = append(buf, byte(p.idx), byte(p.idx>>8), 'k')
	buf = appendInt32(buf, r.key)
	buf = r.encode(buf)
	s.keyBuf = buf
	if m, ok := s.masks[string(buf)]; ok {
		return m
	}
	m := s.m.keyMask(p, kb, r)
	s.masks[string(buf)] = m
	return m
}

// offerings is Model.offeringMask with a per-solve cache.
func (s *solve) offerings(p *pool, pairs bitset.Set) bitset.Set {
	buf := s.keyBuf[:0]
	buf = append(buf, byte(p.idx), byte(p.idx>>8), 'o')
	for _, w := range pairs {
		buf = appendInt64(buf, int64(w))
	}
	s.keyBuf = buf
	if m, ok := s.masks[string(buf)]; ok {
		return m
	}
	m := s.m.offeringMask(p, pairs)
	s.masks[string(buf)] = m
	return m
}

func appendInt32(b []byte, v int32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func appendInt64(b []byte, v int64) []byte {
	return appendInt32(appendInt32(b, int32(v)), int32(v>>32))
}

// cheapestIn returns the cheapest type in set (and its price) when only the
// given offering pairs may be used.
func (s *solve) cheapestIn(p *pool, pairs bitset.Set, all bool, set bitset.Set) (int, float64) {
	if all {
		t := set.First()
		if t < 0 {
			return -1, math.Inf(1)
		}
		return t, p.minPrice[t]
	}
	best, bestPrice := -1, math.Inf(1)
	for t := set.First(); t >= 0; t = set.Next(t + 1) {
		if p.minPrice[t] >= bestPrice {
			// Types are in order of their cheapest offering anywhere, which
			// bounds their price here from below: nothing later can win.
			break
		}
		if price := p.price(t, pairs, false); price < bestPrice {
			best, bestPrice = t, price
		}
	}
	return best, bestPrice
}

// minValuesOK checks the pool's minValues against the types left; under
// BestEffort a shortfall marks the plan relaxed instead of failing it.
func (s *solve) minValuesOK(p *pool, opts bitset.Set, plan *addPlan) bool {
	for i := range p.base {
		r := &p.base[i]
		if r.minValues <= 0 {
			continue
		}
		if s.distinctValues(p, r.key, opts, plan.pairs) >= int(r.minValues) {
			continue
		}
		if s.m.opts.MinValuesPolicy == MinValuesBestEffort {
			plan.relaxed = true
			continue
		}
		return false
	}
	return true
}

// distinctValues counts the values of key the types in set cover.
func (s *solve) distinctValues(p *pool, key int32, set, pairs bitset.Set) int {
	switch {
	case key == s.m.zoneKey || key == s.m.ctKey:
		var seen []int32
		for i := pairs.First(); i >= 0; i = pairs.Next(i + 1) {
			v := p.pairZone[i]
			if key == s.m.ctKey {
				v = p.pairCT[i]
			}
			if !slices.Contains(seen, v) && p.pairBits[i].Intersects(set) {
				seen = append(seen, v)
			}
		}
		return len(seen)
	case p.typeKeys[key] != nil:
		kb := p.typeKeys[key]
		n := 0
		for i := range kb.vals {
			if kb.bits[i].Intersects(set) {
				n++
			}
		}
		return n
	}
	return 0
}

// poolTolerated reports whether the pod tolerates the pool's taints (startup
// taints excepted), cached per view.
func (s *solve) poolTolerated(v *podView, p *pool) bool {
	if int(v.id) >= len(s.poolTol) {
		s.poolTol = append(s.poolTol, make([][]int8, int(v.id)+1-len(s.poolTol))...)
	}
	row := s.poolTol[v.id]
	if row == nil {
		row = make([]int8, len(s.m.pools))
		s.poolTol[v.id] = row
	}
	if row[p.idx] == 0 {
		row[p.idx] = 2
		if _, ok := tolerates(v.sig.tolerations, p.taints, !v.tolerateSoft); ok {
			row[p.idx] = 1
		}
	}
	return row[p.idx] == 1
}

func (s *solve) groupAllows(v *podView, g *keyGroup, slot int32) bool {
	for _, r := range g.refs {
		if !s.allows(v, r, s.tg(r.tg), slot) {
			return false
		}
	}
	return true
}

// claimAllows reports whether the pod's constraints on one key admit the
// domain in slot for claim c. When c's domain for the key is still open, the
// pods c already holds are not counted anywhere yet; they will be counted in
// slot the moment the claim settles there, before this pod, so they count
// here as if they were.
func (s *solve) claimAllows(c *claim, v *podView, g *keyGroup, slot int32) bool {
	if _, settled := c.domain(g.key); settled || len(c.pods) == 0 {
		return s.groupAllows(v, g, slot)
	}
	for _, r := range g.refs {
		t := s.tg(r.tg)
		switch r.role {
		case roleSpread:
			n := s.count(t, slot) + s.undecidedCount(t, slot) + s.pendingOn(c, t, false)
			if r.self {
				n++
			}
			if n-s.spreadMin(v, t) > t.maxSkew {
				return false
			}
		case roleAffinity:
			if s.count(t, slot)+s.pendingOn(c, t, false) == 0 && !s.mayStartAffinity(v) {
				return false
			}
		case roleInverse:
			if s.ownerCount(t, slot)+s.pendingOn(c, t, true) > 0 {
				return false
			}
		default:
			if !s.allows(v, r, t, slot) {
				return false
			}
		}
	}
	return true
}

// pendingOn counts the pods on claim c that group t selects (or, for owner,
// whose required anti-affinity it is) and that are not counted yet because
// c's domain for t's key is open.
func (s *solve) pendingOn(c *claim, t *tg, owner bool) int32 {
	if _, ok := s.claimSlot(c, t); ok {
		return 0
	}
	if t.kind == tgSpread && !owner && s.claimFilter(t, c.pool, c.reqs) == filterFail {
		return 0
	}
	n := int32(0)
	for _, q := range c.pods {
		ids := q.sig.selectedBy
		if owner {
			ids = q.sig.ownsAnti
		}
		if slices.Contains(ids, t.id) {
			n++
		}
	}
	return n
}

// onlyCounted reports whether the pod has no constraint of its own on the
// group's key, only groups that count it.
func (s *solve) onlyCounted(g *keyGroup) bool {
	for _, r := range g.refs {
		if r.role != roleCounted {
			return false
		}
	}
	return true
}

// chooseDomain picks the value of key for a claim whose domain is open: among
// the values the claim and the pod allow and every constraint admits (the
// claim's own pods counted, see claimAllows), the one with the fewest pods of
// the first spread constraint (the pod's own, else the first that counts
// it), then the cheapest for the claim, then for zones the one this solve has
// put the fewest pods in, then the first by name.
func (s *solve) chooseDomain(c *claim, v *podView, g *keyGroup, reqs creqs) (int32, bool) {
	var spread *tg
	for _, r := range g.refs {
		if r.role == roleSpread {
			spread = s.tg(r.tg)
			break
		}
	}
	if spread == nil {
		for _, r := range g.refs {
			if t := s.tg(r.tg); r.role == roleCounted && t.kind == tgSpread {
				spread = t
				break
			}
		}
	}
	pending := int32(0)
	if spread != nil {
		pending = s.pendingOn(c, spread, false)
	}
	best, bestCount, bestPrice, bestLoad, found := int32(0), int32(math.MaxInt32), math.Inf(1), int32(math.MaxInt32), false
	rep := -1
	for _, val := range s.claimValues(c, g.key, reqs) {
		if !s.domainAllowed(v, g.key, val) {
			continue
		}
		slot := s.slotOf(g.key, val)
		if !s.claimAllows(c, v, g, slot) {
			continue
		}
		count := int32(0)
		if spread != nil {
			count = s.count(spread, slot) + s.undecidedCount(spread, slot) + pending
		}
		if found && count > bestCount {
			continue
		}
		// Among equally good domains, take the one where the claim is
		// cheapest, then the emptiest zone.
		price := 0.0
		if g.key == s.m.zoneKey || g.key == s.m.ctKey {
			if rep < 0 {
				rep = s.representative(c)
			}
			price = s.priceWhere(c, rep, g.key, val)
		}
		load := s.zoneLoadOf(g.key, slot)
		if !found || count < bestCount || price < bestPrice || price == bestPrice && load < bestLoad {
			best, bestCount, bestPrice, bestLoad, found = val, count, price, load, true
		}
	}
	return best, found
}

// zoneLoadOf is how many pods this solve has put in the zone in slot (0 for
// other keys).
func (s *solve) zoneLoadOf(key, slot int32) int32 {
	if key != s.m.zoneKey || int(slot) >= len(s.zoneLoad) {
		return 0
	}
	return s.zoneLoad[slot]
}

// representative is the type whose price stands for the claim's when
// choosing a zone or capacity type: its target, or for a template claim the
// cheapest type that can hold it at all.
func (s *solve) representative(c *claim) int {
	if c.target >= 0 {
		return c.target
	}
	return c.reqMask.First()
}

// priceWhere is type t's cheapest offering among the claim's pairs whose zone
// (or capacity type) is val.
func (s *solve) priceWhere(c *claim, t int, key, val int32) float64 {
	p := c.pool
	best := math.Inf(1)
	if t < 0 {
		return best
	}
	for i := c.pairs.First(); i >= 0; i = c.pairs.Next(i + 1) {
		if (key == s.m.zoneKey && p.pairZone[i] == val) || (key == s.m.ctKey && p.pairCT[i] == val) {
			best = min(best, p.pairPrice[i][t])
		}
	}
	return best
}

// claimValues lists the values of key a claim could still take, in slot order.
func (s *solve) claimValues(c *claim, key int32, reqs creqs) []int32 {
	if reqs == nil {
		reqs = c.reqs
	}
	vals := s.m.poolValues(c.pool, key, reqs, c.reqMask)
	slices.SortFunc(vals, func(a, b int32) int { return cmp.Compare(s.slotOf(key, a), s.slotOf(key, b)) })
	return vals
}
