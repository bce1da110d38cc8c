package simulator

import (
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// Search bounds for open NodeClaims. Placing onto existing nodes is always
// exhaustive (consolidation relies on "does not fit" being true); the bounds
// only trade a little packing quality for speed when thousands of claims are open.
const (
	maxSlackScan   = 4096 // claims looked at (cheap checks) for room in their cheapest type
	maxSlackChecks = 64   // of which fully checked
	maxGrowScan    = 1024 // claims looked at for growing into a larger type
	maxGrowChecks  = 16   // of which fully checked
)

// tryPlace places a pod, in this order: an existing or in-flight node (first
// that fits: nodes consolidation means to remove last, initialized nodes
// first, then by name); an open NodeClaim with
// room in its cheapest instance type (best fit); then the cheaper of growing
// an open NodeClaim into a larger type and opening a new one.
func (s *solve) tryPlace(pi *podInfo, v *podView) bool {
	if !s.topologyFeasible(v) {
		return false
	}
	for i := range s.m.nodes {
		if s.nodeOK(pi, v, int32(i)) {
			s.commitNode(pi, v, int32(i))
			return true
		}
	}
	return s.tryClaims(pi, v)
}

// nodeOK reports whether the pod fits node i as it stands in this solve.
func (s *solve) nodeOK(pi *podInfo, v *podView, i int32) bool {
	n := s.m.nodes[i]
	if n.deleting || n.cordoned || s.nodeGone[i] || s.nodeAvoid[i] || n.invalid != "" || slices.Contains(pi.refused, i) {
		return false
	}
	if !s.nodeStatic(v, n) {
		return false
	}
	if !pi.req.Fits(s.free(i)) {
		return false
	}
	if len(v.sig.ports) > 0 {
		if _, clash := portsConflict(s.ports(i), v.sig.ports); clash {
			return false
		}
	}
	return s.nodeTopologyOK(v, n)
}

// nodeStatic checks what does not change during a solve: taints and node
// requirements. The answer is cached per view and node class.
func (s *solve) nodeStatic(v *podView, n *node) bool {
	if v.perNode {
		return s.staticCheck(v, n) == 0
	}
	if int(v.id) >= len(s.classOK) {
		s.classOK = append(s.classOK, make([][]int8, int(v.id)+1-len(s.classOK))...)
	}
	row := s.classOK[v.id]
	if row == nil {
		row = make([]int8, s.m.classes)
		s.classOK[v.id] = row
	}
	if row[n.class] == 0 {
		row[n.class] = 1
		if s.staticCheck(v, n) != 0 {
			row[n.class] = 2
		}
	}
	return row[n.class] == 1
}

// staticCheck returns 0 when taints and requirements allow the node, 1 for
// an untolerated taint, 2 for unmatched requirements.
func (s *solve) staticCheck(v *podView, n *node) int {
	if _, ok := tolerates(v.sig.tolerations, n.taints, !v.tolerateSoft); !ok {
		return 1
	}
	for _, alt := range v.nodeAlts {
		if _, ok := s.m.nodeMismatch(s.vals, n, alt); ok {
			return 0
		}
	}
	return 2
}

func (s *solve) nodeTopologyOK(v *podView, n *node) bool {
	for gi := range v.groups {
		g := &v.groups[gi]
		t0 := s.tg(g.refs[0].tg)
		slot, has := s.nodeSlot(t0, n)
		for _, r := range g.refs {
			t := s.tg(r.tg)
			if !has {
				// A node without the key is in no domain: affinity and spread
				// cannot be met there, anti-affinity cannot be violated.
				if r.role == roleSpread || r.role == roleAffinity {
					return false
				}
				continue
			}
			if !s.allows(v, r, t, slot) {
				return false
			}
		}
	}
	return true
}

// allows reports whether one topology constraint admits the domain in slot.
func (s *solve) allows(v *podView, r tgRef, t *tg, slot int32) bool {
	switch r.role {
	case roleSpread:
		// Pods whose claims the group's filter may yet count count here,
		// not in the minimum (spreadMin): both bounds hold however their
		// claims launch.
		c := s.count(t, slot) + s.undecidedCount(t, slot)
		if r.self {
			c++
		}
		return c-s.spreadMin(v, t) <= t.maxSkew
	case roleAffinity:
		if s.count(t, slot) > 0 {
			return true
		}
		return s.mayStartAffinity(v)
	case roleAnti:
		return s.count(t, slot) == 0 && !s.floatingBlocks(t, slot)
	case roleInverse:
		return s.ownerCount(t, slot) == 0
	default: // roleCounted: no constraint of the pod's own
		return true
	}
}

// spreadMin is the smallest count over the domains the spread constraint is
// measured against. Hostname domains always have a minimum of 0, because a
// new node can always be made (as in Karpenter). Fewer domains than
// minDomains also mean a minimum of 0.
func (s *solve) spreadMin(v *podView, t *tg) int32 {
	if t.hostname {
		return 0
	}
	slots := s.eligibleFor(v, t)
	if int32(len(slots)) < t.minDomains || len(slots) == 0 {
		return 0
	}
	least := s.count(t, slots[0])
	for _, sl := range slots[1:] {
		least = min(least, s.count(t, sl))
	}
	return least
}

// eligibleFor returns the group's domains the pod's own node requirements
// allow (all of them under nodeAffinityPolicy Ignore).
func (s *solve) eligibleFor(v *podView, t *tg) []int32 {
	key := [2]int32{v.id, t.id}
	if e, ok := s.eligible[key]; ok {
		return e
	}
	base := t.eligible
	if t.id >= int32(len(s.m.tgs)) && base == nil {
		base = s.localEligible(t)
	}
	var out []int32
	for _, sl := range base {
		if !t.honorAffinity || s.domainAllowed(v, t.key, s.slotValue(t.key, sl)) {
			out = append(out, sl)
		}
	}
	s.eligible[key] = out
	return out
}

func (s *solve) localEligible(t *tg) []int32 {
	var out []int32
	for _, n := range s.m.nodes {
		if n.deleting || s.nodeGone[n.idx] || !t.nodeOK[n.idx] {
			continue
		}
		if v, ok := n.value(t.key); ok {
			if sl := s.slotOf(t.key, v); !slices.Contains(out, sl) {
				out = append(out, sl)
			}
		}
	}
	for _, p := range s.m.pools {
		for _, v := range s.m.poolValues(p, t.key, p.base, p.viable) {
			if sl := s.slotOf(t.key, v); !slices.Contains(out, sl) {
				out = append(out, sl)
			}
		}
	}
	slices.Sort(out)
	t.eligible = out
	return out
}

// domainAllowed reports whether the pod's own requirements admit a value of key.
func (s *solve) domainAllowed(v *podView, key, val int32) bool {
	for _, alt := range v.domainAlts {
		r, ok := alt.get(key)
		if !ok || r.has(s.vals, val) {
			return true
		}
	}
	return false
}

// mayStartAffinity reports whether the pod may go where one of its pod
// affinity terms finds no pod. As in the kube-scheduler, only as the first
// of its groups: every affinity term selects the pod itself and no pod any
// of them selects runs anywhere. (A pod with affinity to its own pods on the
// hostname and to other pods in a zone cannot start its hostname group
// while those other pods run.)
func (s *solve) mayStartAffinity(v *podView) bool {
	for gi := range v.groups {
		for _, r := range v.groups[gi].refs {
			if r.role == roleAffinity && (!r.self || s.affinityExists(s.tg(r.tg))) {
				return false
			}
		}
	}
	return true
}

// affinityExists reports whether any domain already holds a pod the
// affinity group selects. As in the kube-scheduler, any domain counts, not
// only those the pod may use: a pod whose group lives only in zones its node
// affinity excludes cannot start the group anew elsewhere.
func (s *solve) affinityExists(t *tg) bool {
	return s.totals[t.id] > 0
}

// floatingBlocks reports whether a pod selected by an anti-affinity group sits
// on a claim whose domain is still open and could be slot.
func (s *solve) floatingBlocks(t *tg, slot int32) bool {
	for _, c := range s.floating[t.id] {
		if _, pinned := c.domain(t.key); pinned {
			continue
		}
		for _, v := range s.claimValues(c, t.key, nil) {
			if s.slotOf(t.key, v) == slot {
				return true
			}
		}
	}
	return false
}

func (s *solve) commitNode(pi *podInfo, v *podView, i int32) {
	n := s.m.nodes[i]
	s.free(i).Sub(pi.req)
	if len(v.sig.ports) > 0 {
		s.nodePorts[i] = append(slices.Clone(s.ports(i)), v.sig.ports...)
	}
	s.nodePods[i] = append(s.nodePods[i], pi)
	s.placed(pi)
	for _, id := range pi.sig.selectedBy {
		t := s.tg(id)
		if t.kind == tgSpread && !t.nodeOK[n.idx] {
			continue
		}
		if slot, ok := s.nodeSlot(t, n); ok {
			s.addCount(t, slot, 1, false)
		}
	}
	for _, id := range pi.sig.ownsAnti {
		t := s.tg(id)
		if slot, ok := s.nodeSlot(t, n); ok {
			s.addCount(t, slot, 1, true)
		}
	}
	pi.node = i
}

// topologyFeasible reports whether every topology constraint of the pod on a
// key other than the hostname admits at least one domain the pod may use. When
// one admits none, no location can take the pod and the search is skipped.
func (s *solve) topologyFeasible(v *podView) bool {
	for gi := range v.groups {
		g := &v.groups[gi]
		if g.hostname {
			continue
		}
		exclusiveOnly := true
		for _, r := range g.refs {
			if r.role == roleSpread || r.role == roleAffinity {
				exclusiveOnly = false
			}
		}
		if exclusiveOnly && g.key != s.m.zoneKey && g.key != s.m.ctKey {
			continue // a node without the key would satisfy anti-affinity
		}
		sm := s.slotMap(g.key)
		ok := false
		for slot, val := range sm.vals {
			if s.domainAllowed(v, g.key, val) && s.groupAllows(v, g, int32(slot)) {
				ok = true
				break
			}
		}
		for val, slot := range s.extraSlots[g.key] {
			if !ok && s.domainAllowed(v, g.key, val) && s.groupAllows(v, g, slot) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// noOpenClaimFits reports whether the pod's hostname constraints rule out
// every open claim: it needs a claim without pods of a group, and every claim
// has one.
func (s *solve) noOpenClaimFits(v *podView) bool {
	n := int32(len(s.claims))
	for gi := range v.groups {
		g := &v.groups[gi]
		if !g.hostname {
			continue
		}
		for _, r := range g.refs {
			t := s.tg(r.tg)
			switch {
			case r.role == roleAnti && s.occupiedClaims(t, false) >= n,
				r.role == roleSpread && r.self && t.maxSkew == 1 && s.occupiedClaims(t, false) >= n,
				r.role == roleInverse && s.occupiedClaims(t, true) >= n:
				return true
			}
		}
	}
	return false
}

// quickClaimOK runs the cheap checks that rule most claims out: the pool's
// taints, and the pod's topology constraints on keys the claim has settled.
func (s *solve) quickClaimOK(c *claim, v *podView) bool {
	if !s.poolTolerated(v, c.pool) {
		return false
	}
	for gi := range v.groups {
		g := &v.groups[gi]
		if g.hostname {
			if !s.groupAllows(v, g, c.loc) {
				return false
			}
			continue
		}
		if val, ok := c.domain(g.key); ok && !s.groupAllows(v, g, s.slotOf(g.key, val)) {
			return false
		}
	}
	return true
}

// tryClaims places a pod on an open or new NodeClaim.
func (s *solve) tryClaims(pi *podInfo, v *podView) bool {
	req := pi.req
	// 1. Best fit into room already paid for: claims by cpu slack, ascending.
	start, _ := slices.BinarySearchFunc(s.bySlack, req[resources.CPU], func(c *claim, cpu int64) int {
		switch {
		case c.slack[resources.CPU] < cpu:
			return -1
		case c.slack[resources.CPU] > cpu:
			return 1
		}
		return 0
	})
	var grow *claim
	var growPlan addPlan
	growCost := 0.0
	keepGrow := func(c *claim, p *addPlan) {
		cost := p.price - c.price
		if grow == nil || cost < growCost-1e-12 {
			grow, growCost = c, cost
			growPlan = p.keep()
		}
	}
	if s.noOpenClaimFits(v) {
		start = len(s.bySlack)
	}
	checks := 0
	for i, scanned := start, 0; i < len(s.bySlack) && scanned < maxSlackScan && checks < maxSlackChecks; i, scanned = i+1, scanned+1 {
		c := s.bySlack[i]
		if !req.Fits(c.slack) || !s.quickClaimOK(c, v) {
			continue
		}
		checks++
		plan, ok := s.tryClaim(c, pi, v)
		if !ok {
			continue
		}
		if plan.target == c.target && plan.price <= c.price {
			s.commitClaim(c, pi, v, &plan)
			return true
		}
		keepGrow(c, &plan)
	}
	// 2. Growing a claim into a larger type: try those with the most room.
	checks = 0
	if start == len(s.bySlack) && s.noOpenClaimFits(v) {
		checks = maxGrowChecks
	}
	for i, scanned := len(s.bySlack)-1, 0; i >= 0 && scanned < maxGrowScan && checks < maxGrowChecks; i, scanned = i-1, scanned+1 {
		c := s.bySlack[i]
		if !c.requests.FitsSum(req, c.maxAlloc) || !s.quickClaimOK(c, v) {
			continue
		}
		checks++
		if plan, ok := s.tryClaim(c, pi, v); ok {
			keepGrow(c, &plan)
		}
	}
	// 3. A new claim, from the heaviest NodePool that can take the pod.
	fresh, freshPlan, ok := s.bestNewClaim(pi, v)
	if ok {
		s.chooseTarget(fresh.pool, &freshPlan, pi)
	}
	switch {
	case grow != nil && (!ok || s.preferGrowth(grow, &growPlan, &freshPlan, req)):
		s.commitClaim(grow, pi, v, &growPlan)
		return true
	case ok:
		c := s.openClaim(fresh)
		s.commitClaim(c, pi, v, &freshPlan)
		return true
	}
	return false
}
