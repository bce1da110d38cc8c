package simulator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// explain says why a pod could not be placed: for the existing nodes (tallied
// by reason) and for each NodePool (the first constraint that fails). It runs
// only for pods that failed, so it may be slow.
func (s *solve) explain(pi *podInfo) string {
	switch {
	case pi.invalid != "":
		return pi.invalid
	case pi.sig.invalid != "":
		return "invalid pod: " + pi.sig.invalid
	}
	v := pi.sig.views[pi.level]
	if v.noAlt != "" {
		return v.noAlt
	}
	var parts []string
	if n := s.explainNodes(pi, v); n != "" {
		parts = append(parts, n)
	}
	if s.claimsCap >= 0 && len(s.claims) >= s.claimsCap {
		parts = append(parts, fmt.Sprintf("no new nodeclaim allowed (at most %d)", s.claimsCap))
	} else {
		for _, p := range s.m.pools {
			parts = append(parts, fmt.Sprintf("nodepool %s: %s", p.name, s.explainPool(pi, v, p)))
		}
		if len(s.m.pools) == 0 {
			parts = append(parts, "no nodepool to launch a node from")
		}
	}
	msg := strings.Join(parts, "; ")
	if len(v.relaxed) > 0 {
		msg += " (after relaxing " + strings.Join(v.relaxed, ", ") + ")"
	}
	return msg
}

func (s *solve) explainNodes(pi *podInfo, v *podView) string {
	tally := map[string]int{}
	for i := range s.m.nodes {
		if r := s.nodeReason(pi, v, int32(i)); r != "" {
			tally[r]++
		}
	}
	if len(tally) == 0 {
		return ""
	}
	reasons := make([]string, 0, len(tally))
	for r := range tally {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(cmp.Compare(tally[b], tally[a]), cmp.Compare(a, b)) })
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", tally[r], r)
	}
	return fmt.Sprintf("%d existing node(s) do not fit: %s", len(s.m.nodes), strings.Join(reasons, ", "))
}

// nodeReason names the first check node i fails.
func (s *solve) nodeReason(pi *podInfo, v *podView, i int32) string {
	n := s.m.nodes[i]
	switch {
	case s.nodeGone[i]:
		return "removed in this simulation"
	case n.deleting:
		return "being deleted"
	case n.cordoned:
		return "cordoned"
	case s.nodeAvoid[i]:
		return "avoided in this simulation"
	case n.invalid != "":
		return n.invalid
	case slices.Contains(pi.refused, i):
		return "the hand-off to the kube-scheduler gave up on this node"
	}
	if t, ok := tolerates(v.sig.tolerations, n.taints, !v.tolerateSoft); !ok {
		return "untolerated taint " + t.ToString()
	}
	if s.staticCheck(v, n) != 0 {
		return "node selector or affinity mismatch"
	}
	if d := pi.req.FirstExceeding(s.free(i)); d >= 0 {
		return "insufficient " + string(s.m.res.Name(d))
	}
	if hp, clash := portsConflict(s.ports(i), v.sig.ports); clash {
		return fmt.Sprintf("host port %d/%s in use", hp.port, hp.protocol)
	}
	for gi := range v.groups {
		g := &v.groups[gi]
		for _, r := range g.refs {
			t := s.tg(r.tg)
			slot, has := s.nodeSlot(t, n)
			if !has && (r.role == roleSpread || r.role == roleAffinity) || has && !s.allows(v, r, t, slot) {
				return describeRef(t, r)
			}
		}
	}
	return ""
}

func describeRef(t *tg, r tgRef) string {
	if r.role == roleInverse {
		return fmt.Sprintf("another pod's pod anti-affinity on %s", t.keyName)
	}
	return t.describe() + " not satisfied"
}

// explainPool names the first constraint that keeps the pod off a new node
// of pool p.
func (s *solve) explainPool(pi *podInfo, v *podView, p *pool) string {
	if p.invalid != "" {
		return "cannot be used: " + p.invalid
	}
	if t, ok := tolerates(v.sig.tolerations, p.taints, !v.tolerateSoft); !ok {
		return "untolerated taint " + t.ToString()
	}
	if len(v.sig.ports) > 0 {
		var buf bitset.Set
		if taken := daemonPortTypes(p, v.sig.ports, &buf); taken != nil && p.viable.SubsetOf(taken) {
			for _, dp := range p.daemonPorts {
				if hp, clash := portsConflict(dp.ports, v.sig.ports); clash {
					return fmt.Sprintf("host port %d/%s is used by a daemonset on every instance type", hp.port, hp.protocol)
				}
			}
		}
	}
	ps := &s.pools[p.idx]
	if ps.remainingNodes == 0 {
		return "limit on nodes reached"
	}
	tmpl := s.fresh(p)
	if p.viable.Empty() {
		return "no instance type has an available offering the nodepool allows"
	}
	if tmpl.reqMask.Empty() {
		if s.priceCap > 0 {
			return fmt.Sprintf("no instance type within limits costs less than %.4f/h", s.priceCap)
		}
		return "limits reached (" + s.describeLimits(p) + ")"
	}
	// Requirements, then instance types, then topology, alternative by alternative.
	var reasons []string
	for ai, alt := range v.nodeAlts {
		reason := s.explainAlt(pi, v, tmpl, alt, v.altSrc[ai])
		if reason == "" {
			return "does not fit (no single combination of constraints works)"
		}
		if !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
	}
	return strings.Join(reasons, " or ")
}

func (s *solve) explainAlt(pi *podInfo, v *podView, tmpl *claim, alt creqs, src string) string {
	p := tmpl.pool
	reqs, _, bad := s.merge(p, tmpl.reqs, alt)
	if bad != nil {
		mine := decompile(s.keys, s.vals, *bad).String()
		if e, ok := tmpl.reqs.get(bad.key); ok {
			return fmt.Sprintf("incompatible requirements: %s conflicts with %s (%s)", decompile(s.keys, s.vals, *e), mine, src)
		}
		if bad.key == s.m.hostnameKey || bad.key == s.m.nodeNameKey {
			return fmt.Sprintf("requires an existing node: %s (%s)", mine, src)
		}
		return fmt.Sprintf("incompatible requirements: label %q is not provided by the nodepool: %s (%s)", s.keys.str(bad.key), mine, src)
	}
	mask := s.m.typeMask(p, reqs)
	mask.And(tmpl.reqMask)
	pairs := s.m.allowedPairs(p, reqs)
	offered := s.m.offeringMask(p, pairs)
	if mask.Empty() {
		return fmt.Sprintf("no instance type matches %s", describe(s.keys, s.vals, reqs))
	}
	if !mask.Intersects(offered) {
		return fmt.Sprintf("no instance type matching the requirements has an available offering in %s", describeOfferings(s, reqs))
	}
	mask.And(offered)
	fits := mask.Copy()
	p.fitMask(fits, pi.req)
	if fits.Empty() {
		return "no instance type has room for " + s.describeNeed(p, pi.req, mask)
	}
	for gi := range v.groups {
		g := &v.groups[gi]
		if g.hostname {
			if !s.groupAllows(v, g, tmpl.loc) {
				return s.explainGroup(v, g, tmpl.loc)
			}
			continue
		}
		if _, ok := s.chooseDomain(tmpl, v, g, reqs); !ok {
			return s.explainGroup(v, g, -1)
		}
	}
	if _, ok := s.tryClaim(tmpl, pi, v); !ok {
		var plan addPlan
		plan.pairs = pairs
		if !s.minValuesOK(p, fits, &plan) {
			return "minValues cannot be met by the instance types that fit"
		}
		return ""
	}
	return "a new node would fit; no capacity was left in this simulation"
}

func (s *solve) explainGroup(v *podView, g *keyGroup, slot int32) string {
	for _, r := range g.refs {
		t := s.tg(r.tg)
		if slot >= 0 && !s.allows(v, r, t, slot) || slot < 0 {
			return describeRef(t, r) + " in any domain a new node could have"
		}
	}
	return "topology constraints on " + s.keys.str(g.key) + " not satisfied"
}

func describeOfferings(s *solve, reqs creqs) string {
	var parts []string
	for _, key := range []int32{s.m.zoneKey, s.m.ctKey} {
		if r, ok := reqs.get(key); ok {
			parts = append(parts, decompile(s.keys, s.vals, *r).String())
		}
	}
	if len(parts) == 0 {
		return "any zone"
	}
	return strings.Join(parts, ", ")
}

// describeNeed says what the pod needs with daemonsets, and which resources
// no type has enough of.
func (s *solve) describeNeed(p *pool, req resources.Vector, mask bitset.Set) string {
	largest := s.m.res.New()
	for t := mask.First(); t >= 0; t = mask.Next(t + 1) {
		largest.Max(p.effAlloc[t])
	}
	var short []string
	for d := range req {
		if req[d] > largest[d] {
			short = append(short, string(s.m.res.Name(d)))
		}
	}
	msg := s.m.res.Format(req) + " plus daemonsets"
	if len(short) > 0 {
		msg += " (short of " + strings.Join(short, ", ") + ")"
	}
	return msg
}

func (s *solve) describeLimits(p *pool) string {
	ps := &s.pools[p.idx]
	var parts []string
	for d, l := range p.limits {
		if l >= 0 {
			left := s.m.res.New()
			left[d] = max(ps.remaining[d], 0)
			parts = append(parts, s.m.res.Format(left)+" left")
		}
	}
	return strings.Join(parts, ", ")
}
