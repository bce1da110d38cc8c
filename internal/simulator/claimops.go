package simulator

import (
	"cmp"
	"math"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// fresh returns a template claim for pool p: what a new NodeClaim of the pool
// starts as, given the limits left. It is rebuilt when the limits change.
func (s *solve) fresh(p *pool) *claim {
	ps := &s.pools[p.idx]
	binding := s.limitsBind(p, nil)
	if ps.fresh == nil || (binding || ps.freshLimited) && ps.fresh.version != ps.version {
		c := &claim{id: -1, pool: p, reqs: p.base, requests: s.m.res.New(), maxAlloc: p.largest, cheapest: -1, target: -1, version: ps.version}
		c.pairs = s.m.allowedPairs(p, p.base)
		c.allPairs = c.pairs.Count() == len(p.pairZone)
		c.reqMask = p.viable.Copy()
		ps.freshLimited = binding
		if binding {
			for t := c.reqMask.First(); t >= 0; t = c.reqMask.Next(t + 1) {
				for d, l := range p.limits {
					if l >= 0 && p.capacity[t][d] > ps.remaining[d] {
						c.reqMask.Remove(t)
						break
					}
				}
			}
		}
		if s.priceCap > 0 {
			for t := c.reqMask.First(); t >= 0; t = c.reqMask.Next(t + 1) {
				if p.minPrice[t] >= s.priceCap {
					c.reqMask.Remove(t)
				}
			}
		}
		c.options = c.reqMask.Copy()
		ps.fresh = c
	}
	ps.fresh.loc = int32(len(s.m.nodes) + len(s.claims))
	return ps.fresh
}

// bestNewClaim finds the NodePool a new claim for the pod should come from:
// the heaviest pool that can take it and, among pools of that weight, the one
// whose cheapest fitting type is cheapest (then pool order).
func (s *solve) bestNewClaim(pi *podInfo, v *podView) (*claim, addPlan, bool) {
	if s.claimsCap >= 0 && len(s.claims) >= s.claimsCap {
		return nil, addPlan{}, false
	}
	var best *claim
	var bestPlan addPlan
	for _, p := range s.m.pools {
		if best != nil && p.weight < best.pool.weight {
			break
		}
		if p.invalid != "" || s.pools[p.idx].remainingNodes == 0 {
			continue
		}
		tmpl := s.fresh(p)
		if tmpl.reqMask.Empty() {
			continue
		}
		plan, ok := s.tryClaim(tmpl, pi, v)
		if !ok {
			continue
		}
		if best == nil || plan.price < bestPlan.price-1e-12 {
			best, bestPlan = tmpl, plan.keep()
		}
	}
	return best, bestPlan, best != nil
}

// addSlack adds (sign 1) or removes (sign -1) a claim's room to the total.
func (s *solve) addSlack(slack resources.Vector, sign int64) {
	for d, a := range slack {
		s.slackSum[d] += sign * max(a, 0)
	}
}

// placed takes a placed pod out of the pending demand.
func (s *solve) placed(pi *podInfo) {
	s.sequence = append(s.sequence, pi)
	s.demand.Sub(pi.req)
	if left := s.sigLeft[pi.sig]; left != nil {
		left.Sub(pi.req)
	}
	if pi.sig.ownNode {
		s.ownNodeLeft--
	}
}

// openClaim turns a template into a claim of this solve.
func (s *solve) openClaim(tmpl *claim) *claim {
	p := tmpl.pool
	c := &claim{
		id: int32(len(s.claims)), pool: p, reqs: tmpl.reqs, pairs: tmpl.pairs, allPairs: tmpl.allPairs,
		reqMask: tmpl.reqMask.Copy(), options: tmpl.options.Copy(), requests: s.m.res.New(),
		maxAlloc: tmpl.maxAlloc, ports: tmpl.ports, cheapest: -1, target: -1,
	}
	c.loc = int32(len(s.m.nodes)) + c.id
	s.claims = append(s.claims, c)
	ps := &s.pools[p.idx]
	if ps.remainingNodes > 0 {
		ps.remainingNodes--
		ps.version++
	}
	return c
}

// commitClaim adds a pod to a claim according to plan.
func (s *solve) commitClaim(c *claim, pi *podInfo, v *podView, plan *addPlan) {
	s.addToClaim(c, pi, v, plan, true)
}

// addToClaim adds a pod to a claim according to plan; placed says whether
// the pod is newly placed (it takes its turn in the sequence and leaves the
// pending demand) or moves from another claim (emptyClaim).
func (s *solve) addToClaim(c *claim, pi *podInfo, v *podView, plan *addPlan, placed bool) {
	if c.cheapest >= 0 {
		s.unindex(c)
		s.addSlack(c.slack, -1)
	}
	old := c.reqs
	c.reqs = plan.reqs
	s.refilter(c, old)
	c.pairs, c.allPairs = plan.pairs, plan.allPairs
	if &plan.reqMask[0] != &c.reqMask[0] {
		c.reqMask.CopyFrom(plan.reqMask)
	}
	c.options.CopyFrom(plan.options)
	c.requests.Add(pi.req)
	c.cheapest, c.target, c.price = plan.cheapest, plan.target, plan.price
	c.relaxed = c.relaxed || plan.relaxed
	c.slack = slices.Clone(c.pool.effAlloc[c.target])
	c.slack.Sub(c.requests)
	s.addSlack(c.slack, 1)
	if placed {
		s.placed(pi)
	}
	for i := range c.reqs {
		r := &c.reqs[i]
		if _, now := r.single(); !now {
			continue
		}
		if o, had := old.get(r.key); had {
			if _, was := o.single(); was {
				continue
			}
		}
		s.settle(c, r.key)
	}
	c.pods = append(c.pods, pi)
	if z, ok := c.domain(s.m.zoneKey); ok {
		added := int32(1)
		if o, had := old.get(s.m.zoneKey); !had || !isSingle(o) {
			added = int32(len(c.pods))
		}
		slot := s.slotOf(s.m.zoneKey, z)
		if int(slot) >= len(s.zoneLoad) {
			s.zoneLoad = append(s.zoneLoad, make([]int32, int(slot)+1-len(s.zoneLoad))...)
		}
		s.zoneLoad[slot] += added
	}
	if len(v.sig.ports) > 0 {
		c.ports = append(slices.Clone(c.ports), v.sig.ports...)
	}
	s.recordClaim(pi, c)
	s.index(c)
	s.reserve(c)
	pi.node = -1
}

func isSingle(r *creq) bool {
	_, ok := r.single()
	return ok
}

// settle counts the claim's pods into the groups on key now that the claim's
// domain for key is decided.
func (s *solve) settle(c *claim, key int32) {
	for _, q := range c.pods {
		for _, id := range q.sig.selectedBy {
			t := s.tg(id)
			if t.key != key {
				continue
			}
			if slot, ok := s.claimSlot(c, t); ok {
				s.countOnClaim(t, c, slot, 1)
			}
		}
		for _, id := range q.sig.ownsAnti {
			if t := s.tg(id); t.key == key {
				if slot, ok := s.claimSlot(c, t); ok {
					s.addCount(t, slot, 1, true)
				}
			}
		}
	}
}

// recordClaim counts a pod placed on a claim. Where the claim's domain is
// still open the pod is counted once it is decided (settle); anti-affinity
// meanwhile treats every domain the claim could take as occupied.
func (s *solve) recordClaim(pi *podInfo, c *claim) {
	for _, id := range pi.sig.selectedBy {
		t := s.tg(id)
		slot, ok := s.claimSlot(c, t)
		if !ok {
			if t.kind == tgAnti && !slices.Contains(s.floating[t.id], c) {
				s.floating[t.id] = append(s.floating[t.id], c)
			}
			continue
		}
		s.countOnClaim(t, c, slot, 1)
	}
	for _, id := range pi.sig.ownsAnti {
		t := s.tg(id)
		if slot, ok := s.claimSlot(c, t); ok {
			s.addCount(t, slot, 1, true)
		}
	}
}

// filterState is what a spread constraint's node filter (nodeAffinityPolicy
// or nodeTaintsPolicy Honor) makes of a claim's node: counted, not
// counted, or not decided yet, because the claim may still launch on either
// side of the filter (an open capacity type, say). Requirements only
// narrow, so a decided state stays decided.
type filterState uint8

const (
	filterPass filterState = iota
	filterFail
	filterMaybe
)

// claimFilter decides a spread group's node filter for a claim of pool p
// with requirements reqs, from those requirements: filterPass when they
// admit only nodes that pass it, filterFail when they admit none,
// filterMaybe otherwise (a key they leave open, even one the claim's
// remaining instance types settle). A new node's name is none a filter can
// list, and it lacks the labels pool p's nodes never get.
func (s *solve) claimFilter(t *tg, p *pool, reqs creqs) filterState {
	if t.honorTaints {
		if _, ok := tolerates(t.filterTolerations, p.taints, false); !ok {
			return filterFail
		}
	}
	if !t.honorAffinity || len(t.filterAlts) == 0 {
		return filterPass
	}
	state := filterFail
	for _, alt := range t.filterAlts {
		possible, certain := true, true
		for i := range alt {
			key := alt[i].key
			if key == s.m.hostnameKey || key == s.m.nodeNameKey {
				if !admitsNewName(&alt[i]) {
					possible = false
					break
				}
				continue
			}
			e, has := reqs.get(key)
			if !has {
				if !s.m.keyKnown(s.keys, p, key) {
					if !alt[i].absent {
						possible = false
						break
					}
					continue
				}
				certain = false
				continue
			}
			if x := intersect(s.vals, e, &alt[i]); !x.satisfiable() {
				possible = false
				break
			}
			if !entails(s.vals, e, &alt[i]) {
				certain = false
			}
		}
		switch {
		case possible && certain:
			return filterPass
		case possible:
			state = filterMaybe
		}
	}
	return state
}

// admitsNewName reports whether a requirement on the hostname or node
// name admits a node not created yet, whose name it cannot list: NotIn
// and Exists do, In, DoesNotExist, Gt and Lt do not.
func admitsNewName(r *creq) bool {
	return r.complement && !r.hasGT && !r.hasLT
}

// entails reports whether every label value (or absence) e admits, r
// admits too. It may answer false for some complement requirements that
// do entail r; the filter's state is then undecided and its pods'
// counts bounded (countOnClaim).
func entails(vals *interner, e, r *creq) bool {
	if e.absent && !r.absent {
		return false
	}
	if !e.complement {
		for _, v := range e.vals {
			if !r.has(vals, v) {
				return false
			}
		}
		return true
	}
	x := intersect(vals, e, r)
	x.minValues = e.minValues
	return x.equal(e)
}

// countOnClaim adds delta pods on claim c, settled in slot, to topology
// group t. A spread group counts them into its counts when c's node is
// counted for t, into its undecided counts when c's state for t's filter
// is open (they bound the count from above, not the minimum from below),
// nowhere when c's node is not counted; other groups always count them.
func (s *solve) countOnClaim(t *tg, c *claim, slot int32, delta int32) {
	if t.kind != tgSpread {
		s.addCount(t, slot, delta, false)
		return
	}
	switch s.claimFilter(t, c.pool, c.reqs) {
	case filterPass:
		s.addCount(t, slot, delta, false)
	case filterMaybe:
		s.addUndecided(t, slot, delta)
	}
}

// addUndecided changes a spread group's count of pods on claims whose
// filter state is open (countOnClaim), in one slot.
func (s *solve) addUndecided(t *tg, slot int32, delta int32) {
	if s.undecided == nil {
		s.undecided = map[int32][]int32{}
	}
	arr := s.undecided[t.id]
	if int(slot) >= len(arr) {
		arr = append(arr, make([]int32, int(slot)+1-len(arr))...)
	}
	arr[slot] += delta
	s.undecided[t.id] = arr
}

// undecidedCount is the number of pods in slot that group t counts only if
// their claims launch on the filter's side (addUndecided).
func (s *solve) undecidedCount(t *tg, slot int32) int32 {
	if arr := s.undecided[t.id]; int(slot) < len(arr) {
		return arr[slot]
	}
	return 0
}

// refilter moves the pods claim c held before its requirements narrowed
// from old out of the undecided counts of the spread groups whose filter
// the narrowing decided: into the counts when c's node now passes it, out
// of every count when it now fails. Pods not counted yet (their slot was
// open under old) are left to settle.
func (s *solve) refilter(c *claim, old creqs) {
	if len(s.undecided) == 0 {
		return
	}
	for _, q := range c.pods {
		for _, id := range q.sig.selectedBy {
			if s.undecided[id] == nil {
				continue
			}
			t := s.tg(id)
			if r, had := old.get(t.key); !t.hostname && (!had || !isSingle(r)) {
				continue
			}
			if s.claimFilter(t, c.pool, old) != filterMaybe {
				continue
			}
			// Narrowing keeps a settled domain, so the slot is the same.
			slot, _ := s.claimSlot(c, t)
			switch s.claimFilter(t, c.pool, c.reqs) {
			case filterPass:
				s.addUndecided(t, slot, -1)
				s.addCount(t, slot, 1, false)
			case filterFail:
				s.addUndecided(t, slot, -1)
			}
		}
	}
}

// reserve holds the capacity of the claim's cheapest option against its
// pool's limits. Options bigger than that are trimmed when the plan is
// rendered (limitCaps), so whichever option the provider launches, the pool
// stays within its limits.
func (s *solve) reserve(c *claim) {
	p := c.pool
	ps := &s.pools[p.idx]
	if ps.remaining == nil {
		return
	}
	if c.reserved == nil {
		c.reserved = s.m.res.New()
	}
	need := p.capacity[c.target]
	if slices.Equal(need, c.reserved) {
		return
	}
	for d, l := range p.limits {
		if l >= 0 {
			ps.remaining[d] += c.reserved[d] - need[d]
		}
	}
	copy(c.reserved, need)
	ps.version++
}

// limitsBind reports whether some type of pool p is too big for what is left
// of its limits (beyond what claim c, if any, already holds). Limits "so
// large they never bind" then cost nothing.
func (s *solve) limitsBind(p *pool, c *claim) bool {
	ps := &s.pools[p.idx]
	if ps.remaining == nil {
		return false
	}
	for d, l := range p.limits {
		if l < 0 {
			continue
		}
		held := int64(0)
		if c != nil && c.reserved != nil {
			held = c.reserved[d]
		}
		if p.maxCapacity[d]-held > ps.remaining[d] {
			return true
		}
	}
	return false
}

// withinLimits removes from opts the types that would take claim c past its
// pool's limits if it grew into them.
func (s *solve) withinLimits(c *claim, opts bitset.Set) {
	p := c.pool
	ps := &s.pools[p.idx]
	if !s.limitsBind(p, c) {
		return
	}
	for t := opts.First(); t >= 0; t = opts.Next(t + 1) {
		for d, l := range p.limits {
			if l < 0 {
				continue
			}
			held := int64(0)
			if c.reserved != nil {
				held = c.reserved[d]
			}
			if p.capacity[t][d]-held > ps.remaining[d] {
				opts.Remove(t)
				break
			}
		}
	}
}

// limitCaps shares what is left of each limited pool's limits evenly among
// its claims: a claim may keep options up to its reservation plus its share.
func (s *solve) limitCaps() map[*claim]resources.Vector {
	caps := map[*claim]resources.Vector{}
	perPool := map[int][]*claim{}
	for _, c := range s.claims {
		if len(c.pods) > 0 && s.pools[c.pool.idx].remaining != nil {
			perPool[c.pool.idx] = append(perPool[c.pool.idx], c)
		}
	}
	for idx, claims := range perPool {
		p := s.m.pools[idx]
		left := s.pools[idx].remaining
		for _, c := range claims {
			capv := slices.Clone(c.reserved)
			for d, l := range p.limits {
				if l < 0 {
					capv[d] = math.MaxInt64
				} else if left[d] > 0 {
					capv[d] += left[d] / int64(len(claims))
				}
			}
			caps[c] = capv
		}
	}
	return caps
}

func slackLess(a, b *claim) int {
	return cmp.Or(cmp.Compare(a.slack[resources.CPU], b.slack[resources.CPU]), cmp.Compare(a.id, b.id))
}

func (s *solve) index(c *claim) {
	i, _ := slices.BinarySearchFunc(s.bySlack, c, slackLess)
	s.bySlack = slices.Insert(s.bySlack, i, c)
}

func (s *solve) unindex(c *claim) {
	i, ok := slices.BinarySearchFunc(s.bySlack, c, slackLess)
	if ok {
		s.bySlack = slices.Delete(s.bySlack, i, i+1)
	}
}
