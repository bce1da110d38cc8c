package simulator

import (
	"cmp"
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// Zonal pods are pods whose only topology terms are spread constraints over
// keys other than the hostname (zones, say), and that only such spreads
// count: no pod affinity or anti-affinity of their own or of others that
// selects them, no host ports, no volumes, no preferences to relax. Which
// node of its domains one lands on matters to no other pod, as long as
// the node passes the same spread filters (nodeAffinityPolicy and
// nodeTaintsPolicy Honor count only pods on nodes that do).
//
// Such pods are placed before the generic pods, so the claims opened for
// them were sized before the generic pods were packed, and the generic
// pods' claims can end with room in the same domain. The kube-scheduler
// fills that room with whichever pods of the group it places first, and a
// claim made only for zonal pods is left half empty, or empty. So once
// every pod is placed, a claim that holds only zonal pods is emptied into
// the room other claims of the same domains have left, if all of its pods
// fit there without any claim changing its type, its cheapest type or
// their prices, or being narrowed on keys other than the pods' groups',
// and every group that counts a pod counts it on its new claim too; then
// it is dropped. Otherwise no pod moves. A moved pod stays in its domains
// and in its groups' counts, so every domain's count is what it was at
// every step of the plan's sequence, and the plan stays one the
// kube-scheduler admits in that order.

// isZonal reports whether a pod at view v is zonal.
func (s *solve) isZonal(pi *podInfo, v *podView) bool {
	sig := v.sig
	if pi.invalid != "" || sig.invalid != "" || v.noAlt != "" || len(v.groups) == 0 ||
		len(sig.ownsAnti) != 0 || len(sig.inverse) != 0 || len(sig.ports) != 0 || sig.volumes != nil ||
		len(sig.steps) != 0 || sig.ownNode || len(sig.affinity) != 0 || len(sig.anti) != 0 {
		return false
	}
	for gi := range v.groups {
		g := &v.groups[gi]
		if g.hostname {
			return false
		}
		for _, r := range g.refs {
			if r.role != roleSpread && r.role != roleCounted {
				return false
			}
		}
	}
	for _, id := range sig.selectedBy {
		if t := s.tg(id); t.hostname || t.kind != tgSpread {
			return false
		}
	}
	return true
}

// emptyZonalClaims empties and drops the claims that hold only zonal pods
// where the room other claims have left in the same domains takes all
// their pods, the dearest claims first.
func (s *solve) emptyZonalClaims() {
	var candidates []*claim
	for _, c := range s.claims {
		if len(c.pods) > 0 && s.onlyZonal(c) {
			candidates = append(candidates, c)
		}
	}
	if len(candidates) == 0 {
		return
	}
	slices.SortStableFunc(candidates, func(a, b *claim) int { return cmp.Or(cmp.Compare(b.price, a.price), cmp.Compare(a.id, b.id)) })
	most := s.mostRoomPerZone()
	for _, c := range candidates {
		if len(c.pods) == 0 || !s.onlyZonal(c) || !s.mayFit(c, most) || !s.roomElsewhere(c) {
			continue
		}
		s.emptyClaim(c)
		most = s.mostRoomPerZone()
	}
}

// zoneRoom is, per zone slot, the most room any claim with pods in that
// zone has left, per resource (over the claims' rooms, not one claim's, and
// with the claim being emptied among them: a bound no pod beyond it fits
// in); open is the same over the claims whose zone is open and whose pods
// no group counts.
type zoneRoom struct {
	zone map[int32]resources.Vector
	open resources.Vector
}

// mostRoomPerZone computes the zoneRoom of the solve's claims.
func (s *solve) mostRoomPerZone() zoneRoom {
	most := zoneRoom{zone: map[int32]resources.Vector{}, open: s.m.res.New()}
	for _, c := range s.claims {
		if len(c.pods) == 0 {
			continue
		}
		room := most.open
		if z, ok := c.domain(s.m.zoneKey); ok {
			slot := s.slotOf(s.m.zoneKey, z)
			if room = most.zone[slot]; room == nil {
				room = s.m.res.New()
				most.zone[slot] = room
			}
		} else if !genericOnly(c) {
			continue
		}
		for d, a := range c.slack {
			room[d] = max(room[d], a)
		}
	}
	return most
}

// mayFit reports whether every pod of c fits the most room claims in its
// zone (or open ones) have left: a pod no claim has room for stops the
// emptying before the costlier check. Claims whose pods spread on keys
// other than the zone are not filtered.
func (s *solve) mayFit(c *claim, most zoneRoom) bool {
	z, ok := c.domain(s.m.zoneKey)
	if !ok {
		return true
	}
	for _, pi := range c.pods {
		v := pi.sig.views[pi.level]
		for gi := range v.groups {
			if v.groups[gi].key != s.m.zoneKey {
				return true
			}
		}
	}
	inZone := most.zone[s.slotOf(s.m.zoneKey, z)]
	for _, pi := range c.pods {
		if !pi.req.Fits(most.open) && (inZone == nil || !pi.req.Fits(inZone)) {
			return false
		}
	}
	return true
}

// genericOnly reports whether no pod of c is counted by a group or owns an
// anti-affinity term: settling c's open domains changes no count.
func genericOnly(c *claim) bool {
	for _, q := range c.pods {
		if len(q.sig.selectedBy) != 0 || len(q.sig.ownsAnti) != 0 {
			return false
		}
	}
	return true
}

// onlyZonal reports whether every pod of c is zonal and c's domain is
// settled on every key their groups use.
func (s *solve) onlyZonal(c *claim) bool {
	for _, pi := range c.pods {
		v := pi.sig.views[pi.level]
		if !s.isZonal(pi, v) {
			return false
		}
		for gi := range v.groups {
			if _, ok := c.domain(v.groups[gi].key); !ok {
				return false
			}
		}
	}
	return true
}

// mayTake reports whether claim t may take pods of claim c into its room:
// on every key of their groups t is in c's domain, or t's domain is open
// and none of its pods is counted by any group (so settling it changes no
// count).
func (s *solve) mayTake(t, c *claim, v *podView) bool {
	if t == c || len(t.pods) == 0 {
		return false
	}
	open := false
	for gi := range v.groups {
		key := v.groups[gi].key
		want, _ := c.domain(key)
		got, ok := t.domain(key)
		switch {
		case ok && got != want:
			return false
		case !ok:
			open = true
		}
	}
	return !open || genericOnly(t)
}

// roomElsewhere reports whether the room the other claims that may take
// c's pods have left holds all of them (largest first, each into the
// least room it fits): a necessary condition, checked before any pod
// moves.
func (s *solve) roomElsewhere(c *claim) bool {
	pods := slices.Clone(c.pods)
	slices.SortStableFunc(pods, func(a, b *podInfo) int { return cmp.Compare(b.req[resources.CPU], a.req[resources.CPU]) })
	left := map[*claim]resources.Vector{}
	for _, pi := range pods {
		v := pi.sig.views[pi.level]
		var best *claim
		for _, t := range s.claims {
			if !s.mayTake(t, c, v) {
				continue
			}
			room, ok := left[t]
			if !ok {
				room = resources.Vector(slices.Clone(t.slack))
				left[t] = room
			}
			if pi.req.Fits(room) && (best == nil || room[resources.CPU] < left[best][resources.CPU]) {
				best = t
			}
		}
		if best == nil {
			return false
		}
		left[best].Sub(pi.req)
	}
	return true
}

// move is one pod's move in emptyClaim: onto target, by plan.
type move struct {
	pi     *podInfo
	target *claim
	plan   addPlan
}

// emptyClaim moves all of c's pods, largest first, each into the claim
// with the least room that takes it (roomFor), and drops c; or, if one of
// them finds no room, moves none. The moves are planned first against
// copies of the claims they fill, then made.
func (s *solve) emptyClaim(c *claim) {
	pods := slices.Clone(c.pods)
	slices.SortStableFunc(pods, func(a, b *podInfo) int { return cmp.Compare(b.req[resources.CPU], a.req[resources.CPU]) })
	filled := map[*claim]*claim{}
	moves := make([]move, 0, len(pods))
	for _, pi := range pods {
		v := pi.sig.views[pi.level]
		// The pod is checked as it will be when it moves: out of c's
		// counts, the pods moved before it counted on their new claims
		// (in the same domains, so the counts are the same).
		s.uncountOnClaim(pi, c)
		target, plan, ok := s.roomFor(c, pi, v, filled)
		s.recordClaim(pi, c)
		if !ok {
			return
		}
		moves = append(moves, move{pi: pi, target: target, plan: plan})
		filled[target] = s.filledCopy(filled[target], target, pi, &plan)
	}
	for i := range moves {
		m := &moves[i]
		s.uncountOnClaim(m.pi, c)
		s.takeOff(c, m.pi)
		s.addToClaim(m.target, m.pi, m.pi.sig.views[m.pi.level], &m.plan, false)
	}
}

// roomFor finds the claim with the least room left that takes pi from c
// (filled holds copies of the claims earlier moves filled, as they will
// be): in c's domains, counted by every group that counts it on c, with
// its requirements narrowed only on the keys of pi's groups, and without
// its type, cheapest type or price changing.
func (s *solve) roomFor(c *claim, pi *podInfo, v *podView, filled map[*claim]*claim) (*claim, addPlan, bool) {
	var best *claim
	var bestPlan addPlan
	bestRoom := int64(0)
	for _, t := range s.claims {
		if !s.mayTake(t, c, v) {
			continue
		}
		now := t
		if f := filled[t]; f != nil {
			now = f
		}
		if !pi.req.Fits(now.slack) || (best != nil && now.slack[resources.CPU] >= bestRoom) {
			continue
		}
		plan, ok := s.tryClaim(now, pi, v)
		if !ok || plan.target != t.target || plan.cheapest != t.cheapest || plan.price > t.price ||
			t.pool.price(plan.cheapest, plan.pairs, plan.allPairs) > t.pool.price(t.cheapest, t.pairs, t.allPairs) ||
			!s.sameDomains(plan.reqs, c, v) || !narrowsOnlyGroupKeys(plan.reqs, now.reqs, v) || !s.countedAlike(pi, c, t, plan.reqs) {
			continue
		}
		best, bestPlan, bestRoom = t, plan.keep(), now.slack[resources.CPU]
	}
	return best, bestPlan, best != nil
}

// filledCopy returns a copy of claim t (or updates f, an earlier copy) as
// it will be once pi is added by plan: what tryClaim reads of it.
func (s *solve) filledCopy(f, t *claim, pi *podInfo, plan *addPlan) *claim {
	if f == nil {
		cp := *t
		cp.requests = slices.Clone(t.requests)
		cp.pods = slices.Clone(t.pods)
		f = &cp
	}
	f.reqs, f.pairs, f.allPairs = plan.reqs, plan.pairs, plan.allPairs
	f.reqMask, f.options = plan.reqMask.Copy(), plan.options.Copy()
	f.requests.Add(pi.req)
	f.pods = append(f.pods, pi)
	f.cheapest, f.target, f.price = plan.cheapest, plan.target, plan.price
	f.slack = slices.Clone(f.pool.effAlloc[f.target])
	f.slack.Sub(f.requests)
	return f
}

// narrowsOnlyGroupKeys reports whether reqs differ from before only on the
// keys of v's groups: a requirement the pod brings on another key (its
// node selector, say) could change which groups count the claim's other
// pods.
func narrowsOnlyGroupKeys(reqs, before creqs, v *podView) bool {
	groupKey := func(key int32) bool {
		for gi := range v.groups {
			if v.groups[gi].key == key {
				return true
			}
		}
		return false
	}
	for i := range reqs {
		r := &reqs[i]
		if groupKey(r.key) {
			continue
		}
		if o, had := before.get(r.key); !had || !sameReq(o, r) {
			return false
		}
	}
	for i := range before {
		if _, has := reqs.get(before[i].key); !has && !groupKey(before[i].key) {
			return false
		}
	}
	return true
}

// countedAlike reports whether every spread group that counts pi on claim
// c counts it on claim t with requirements reqs too: a group with
// nodeAffinityPolicy or nodeTaintsPolicy Honor counts only the pods on
// nodes that pass its filter.
func (s *solve) countedAlike(pi *podInfo, c, t *claim, reqs creqs) bool {
	probe := claim{pool: t.pool, reqs: reqs}
	for _, id := range pi.sig.selectedBy {
		g := s.tg(id)
		if g.kind != tgSpread {
			continue
		}
		// Where c left the filter open, the pod was placed as if counted
		// or not; elsewhere it must stay counted (or not) as it was.
		if was := s.claimFilter(g, c.pool, c.reqs); was != filterMaybe && was != s.claimFilter(g, probe.pool, probe.reqs) {
			return false
		}
	}
	return true
}

// sameDomains reports whether reqs put a claim in c's domain on every key
// of v's groups.
func (s *solve) sameDomains(reqs creqs, c *claim, v *podView) bool {
	for gi := range v.groups {
		key := v.groups[gi].key
		want, _ := c.domain(key)
		r, ok := reqs.get(key)
		if !ok {
			return false
		}
		if got, single := r.single(); !single || got != want {
			return false
		}
	}
	return true
}

// uncountOnClaim takes a pod on claim c out of the counts recordClaim put
// it in (zonal pods own no anti-affinity and c's domains are settled).
func (s *solve) uncountOnClaim(pi *podInfo, c *claim) {
	for _, id := range pi.sig.selectedBy {
		t := s.tg(id)
		slot, ok := s.claimSlot(c, t)
		if !ok {
			continue
		}
		s.countOnClaim(t, c, slot, -1)
	}
}

// takeOff removes a pod from claim c, which keeps its type; an emptied
// claim leaves the index of open room and is dropped from the plan.
func (s *solve) takeOff(c *claim, pi *podInfo) {
	s.unindex(c)
	s.addSlack(c.slack, -1)
	c.pods = slices.DeleteFunc(c.pods, func(q *podInfo) bool { return q == pi })
	c.requests.Sub(pi.req)
	if z, ok := c.domain(s.m.zoneKey); ok {
		if slot := s.slotOf(s.m.zoneKey, z); int(slot) < len(s.zoneLoad) {
			s.zoneLoad[slot]--
		}
	}
	if len(c.pods) == 0 {
		s.release(c)
		return
	}
	c.slack = slices.Clone(c.pool.effAlloc[c.target])
	c.slack.Sub(c.requests)
	s.addSlack(c.slack, 1)
	s.index(c)
}

// release gives back what an emptied claim held against its pool's
// limits: the capacity reserve took, and the node openClaim counted (a
// claim opened when the count was already spent gives back one it did
// not take; the pass opens no claim after it).
func (s *solve) release(c *claim) {
	ps := &s.pools[c.pool.idx]
	if ps.remainingNodes >= 0 {
		ps.remainingNodes++
		ps.version++
	}
	if ps.remaining == nil || c.reserved == nil {
		return
	}
	for d, l := range c.pool.limits {
		if l >= 0 {
			ps.remaining[d] += c.reserved[d]
		}
	}
	clear(c.reserved)
	ps.version++
}
