package simulator

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
)

// plan turns the solve's state into a Plan.
func (s *solve) plan(pods, failed []*podInfo) *Plan {
	out := &Plan{}
	for _, pi := range pods {
		if pi.node >= 0 {
			out.Placements = append(out.Placements, Placement{Pod: pi.pod, Node: s.m.nodes[pi.node].name})
		}
	}
	cache := map[string]typeList{}
	caps := s.limitCaps()
	for _, c := range s.claims {
		if len(c.pods) == 0 {
			// Emptied into other claims' room (emptyZonalClaims).
			continue
		}
		if capv, ok := caps[c]; ok {
			for t := c.options.First(); t >= 0; t = c.options.Next(t + 1) {
				if !c.pool.capacity[t].Fits(capv) {
					c.options.Remove(t)
				}
			}
		}
		nc, problem := s.finalizeClaim(c, cache)
		if problem != "" {
			for _, pi := range c.pods {
				failed = append(failed, pi)
				pi.invalid = problem
			}
			continue
		}
		out.NewNodeClaims = append(out.NewNodeClaims, nc)
	}
	for _, pi := range s.sequence {
		if pi.invalid == "" {
			out.Sequence = append(out.Sequence, pi.pod)
		}
	}
	slices.SortStableFunc(failed, func(a, b *podInfo) int { return cmp.Compare(a.order, b.order) })
	for _, pi := range failed {
		reason := ""
		if !s.req.SkipReasons {
			reason = s.explain(pi)
		}
		out.Unschedulable = append(out.Unschedulable, Unschedulable{Pod: pi.pod, Reason: reason})
	}
	return out
}

// typeList is a claim's instance-type options rendered once and shared by
// claims with the same options.
type typeList struct {
	types []*cloudprovider.InstanceType
	req   requirements.Requirement
	set   bitset.Set
}

// finalizeClaim renders a claim: options ordered by price and truncated,
// requirements, requests. It returns a problem instead when the truncated
// options break a minValues under the Strict policy.
func (s *solve) finalizeClaim(c *claim, cache map[string]typeList) (*NewNodeClaim, string) {
	p := c.pool
	order := s.priceOrder(p, c.pairs, c.allPairs)
	key := make([]byte, 0, 8*len(c.options)+8)
	key = append(key, byte(p.idx), byte(p.idx>>8))
	for _, w := range c.pairs {
		key = appendInt64(key, int64(w))
	}
	for _, w := range c.options {
		key = appendInt64(key, int64(w))
	}
	list, ok := cache[string(key)]
	if !ok {
		list.set = bitset.New(p.nt)
		names := make([]string, 0, min(c.options.Count(), s.m.opts.MaxInstanceTypes))
		for _, t := range order {
			if len(list.types) == s.m.opts.MaxInstanceTypes {
				break
			}
			if !c.options.Has(int(t)) || (s.priceCap > 0 && p.price(int(t), c.pairs, c.allPairs) >= s.priceCap) {
				continue
			}
			list.types = append(list.types, p.types[t])
			list.set.Add(int(t))
			names = append(names, p.types[t].Name)
		}
		list.req = requirements.In(corev1.LabelInstanceTypeStable, names...)
		cache[string(key)] = list
	}
	if len(list.types) == 0 {
		return nil, "no instance type is left under the price cap"
	}
	relaxed := c.relaxed
	var plan addPlan
	plan.pairs = c.pairs
	if !s.minValuesOK(p, list.set, &plan) {
		return nil, fmt.Sprintf("nodepool %s: minValues cannot be met within %d instance types", p.name, s.m.opts.MaxInstanceTypes)
	}
	relaxed = relaxed || plan.relaxed

	var zones, cts []string
	for i := c.pairs.First(); i >= 0; i = c.pairs.Next(i + 1) {
		if !p.pairBits[i].Intersects(list.set) {
			continue
		}
		if z := s.m.vals.str(p.pairZone[i]); !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
		if ct := s.m.vals.str(p.pairCT[i]); !slices.Contains(cts, ct) {
			cts = append(cts, ct)
		}
	}
	var keep creqs
	for _, r := range c.reqs {
		if r.key != s.m.hostnameKey && r.key != s.m.nodeNameKey {
			keep = append(keep, r)
		}
	}
	reqs := decompileReqs(s.keys, s.vals, keep).Add(
		list.req,
		requirements.In(corev1.LabelTopologyZone, zones...),
		requirements.In(v1.CapacityTypeLabelKey, cts...),
	)
	requests := s.m.res.New()
	copy(requests, c.requests)
	requests.Add(p.daemon[c.cheapest])
	pods := make([]*corev1.Pod, len(c.pods))
	for i, pi := range c.pods {
		pods[i] = pi.pod
	}
	return &NewNodeClaim{
		NodePool:         p.name,
		Requirements:     reqs,
		InstanceTypes:    list.types,
		Pods:             pods,
		Requests:         s.m.res.ToList(requests),
		Price:            p.price(c.cheapest, c.pairs, c.allPairs),
		MinValuesRelaxed: relaxed,
	}, ""
}

// priceOrder returns the pool's types ordered by their cheapest offering
// among pairs (then name), without types not offered there.
func (s *solve) priceOrder(p *pool, pairs bitset.Set, all bool) []int32 {
	key := s.keyBuf[:0]
	key = append(key, byte(p.idx), byte(p.idx>>8), 'p')
	for _, w := range pairs {
		key = appendInt64(key, int64(w))
	}
	s.keyBuf = key
	if s.orders == nil {
		s.orders = map[string][]int32{}
	}
	if o, ok := s.orders[string(key)]; ok {
		return o
	}
	var order []int32
	for t := range p.nt {
		if !math.IsInf(p.price(t, pairs, all), 1) {
			order = append(order, int32(t))
		}
	}
	if !all {
		slices.SortStableFunc(order, func(a, b int32) int {
			return cmp.Compare(p.price(int(a), pairs, false), p.price(int(b), pairs, false))
		})
	}
	s.orders[string(key)] = order
	return order
}
