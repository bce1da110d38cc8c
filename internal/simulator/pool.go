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
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// pool is a NodePool indexed for fast instance-type filtering. Instance types
// are numbered by price (cheapest available offering, then name), so the
// cheapest member of a set is its first bit.
type pool struct {
	idx     int
	name    string
	np      *v1.NodePool
	weight  int32
	invalid string // why the pool cannot launch anything, if it cannot

	base     creqs // requirements, template labels and the nodepool label
	baseReqs requirements.Requirements
	taints   []corev1.Taint

	types  []*cloudprovider.InstanceType
	nt     int
	viable bitset.Set // compatible with base, an available offering, room after daemonsets

	typeKeys map[int32]*keyBits // keys the types' requirements constrain (zone and capacity type excluded)

	pairZone, pairCT []int32      // per (zone, capacity type) pair with an available offering
	pairBits         []bitset.Set // types offered at each pair
	pairPrice        [][]float64  // [pair][type], +Inf where not offered
	minPrice         []float64    // per type, cheapest available offering

	capacity    []resources.Vector // per type, counts against limits
	maxCapacity resources.Vector   // component-wise max of capacity
	effAlloc    []resources.Vector // per type, allocatable minus daemonset overhead
	daemon      []resources.Vector // per type, daemonset overhead
	fit         []dimIndex         // per resource dimension
	largest     resources.Vector   // component-wise max of effAlloc over viable types
	hull        []hullPoint        // capacity per dollar (see cost.go)

	// daemonPorts are the host ports of the daemonsets that run on some
	// type of the pool, each with the types whose nodes run it: a pod
	// binding one of those ports cannot go on those types.
	daemonPorts []daemonPorts

	hasLimits  bool
	limits     resources.Vector // remaining per dimension; -1 means unlimited
	limitNodes int64            // remaining nodes; -1 means unlimited
	usage      resources.Vector
	usageNodes int64
	usageGiven bool // NodePool.Usage was set; otherwise it is summed from the nodes
}

// keyBits indexes one label key across a pool's instance types.
type keyBits struct {
	vals      []int32      // sorted values some type allows
	bits      []bitset.Set // types allowing vals[i]
	absentOK  bitset.Set   // types whose requirement admits a missing label
	undefined bitset.Set   // types that do not constrain the key
	complex   []int32      // types with a cofinite requirement, checked one by one
	complexRq []creq
}

// dimIndex answers "which types have at least x of this resource" with one
// binary search and one bitset.
type dimIndex struct {
	thresholds []int64      // ascending distinct effAlloc values
	geq        []bitset.Set // types with effAlloc >= thresholds[i]
}

func (m *Model) buildPool(idx int, np NodePool) *pool {
	p := &pool{idx: idx, np: np.NodePool, limitNodes: -1}
	if np.NodePool == nil {
		p.name = fmt.Sprintf("<nil nodepool %d>", idx)
		p.invalid = "nodepool is nil"
		return p
	}
	p.name = np.NodePool.Name
	p.weight = ptrOr(np.NodePool.Spec.Weight, 0)
	spec := np.NodePool.Spec.Template.Spec
	p.taints = spec.Taints

	reqs, err := requirements.FromNodePoolRequirements(spec.Requirements)
	if err != nil {
		p.invalid = fmt.Sprintf("invalid requirements: %v", err)
	}
	reqs = reqs.Intersect(requirements.FromLabels(np.NodePool.Spec.Template.ObjectMeta.Labels))
	reqs = reqs.Add(requirements.In(v1.NodePoolLabelKey, p.name))
	if err := reqs.Satisfiable(); err != nil && p.invalid == "" {
		p.invalid = fmt.Sprintf("contradictory requirements: %v", err)
	}
	p.baseReqs = reqs
	p.base = compileReqs(m.keys, m.vals, reqs)

	for _, it := range np.InstanceTypes {
		if it != nil {
			p.types = append(p.types, it)
		}
	}
	p.minPrice = make([]float64, 0, len(p.types))
	prices := make(map[*cloudprovider.InstanceType]float64, len(p.types))
	for _, it := range p.types {
		price := math.Inf(1)
		if o, ok := it.CheapestOffering(nil); ok {
			price = o.Price
		}
		prices[it] = price
	}
	slices.SortStableFunc(p.types, func(a, b *cloudprovider.InstanceType) int {
		if c := cmp.Compare(prices[a], prices[b]); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	p.nt = len(p.types)
	for _, it := range p.types {
		p.minPrice = append(p.minPrice, prices[it])
	}
	m.indexTypeKeys(p)
	m.indexOfferings(p)
	p.capacity = make([]resources.Vector, p.nt)
	p.effAlloc = make([]resources.Vector, p.nt)
	p.daemon = make([]resources.Vector, p.nt)
	p.maxCapacity = m.res.New()
	for t, it := range p.types {
		p.capacity[t] = m.res.New()
		_ = m.res.AddTo(p.capacity[t], it.Capacity) // unparsable amounts count as zero capacity
		p.maxCapacity.Max(p.capacity[t])
		p.effAlloc[t] = m.res.New()
		_ = m.res.AddTo(p.effAlloc[t], it.Allocatable())
		p.daemon[t] = m.res.New()
	}
	p.viable = bitset.New(p.nt)
	if p.invalid == "" {
		p.viable = m.typeMask(p, p.base)
		p.viable.And(m.offeringMask(p, m.allowedPairs(p, p.base)))
	}
	m.indexLimits(p, np)
	return p
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func (m *Model) indexTypeKeys(p *pool) {
	p.typeKeys = map[int32]*keyBits{}
	for t, it := range p.types {
		for _, r := range it.Requirements.List() {
			if r.Key() == corev1.LabelTopologyZone || r.Key() == v1.CapacityTypeLabelKey {
				continue
			}
			c := compileReq(m.keys, m.vals, r)
			kb := p.typeKeys[c.key]
			if kb == nil {
				kb = &keyBits{absentOK: bitset.New(p.nt), undefined: bitset.Full(p.nt)}
				p.typeKeys[c.key] = kb
			}
			kb.undefined.Remove(t)
			switch {
			case c.complement:
				kb.complex = append(kb.complex, int32(t))
				kb.complexRq = append(kb.complexRq, c)
			default:
				if c.absent {
					kb.absentOK.Add(t)
				}
				for _, v := range c.vals {
					i, found := slices.BinarySearch(kb.vals, v)
					if !found {
						kb.vals = slices.Insert(kb.vals, i, v)
						kb.bits = slices.Insert(kb.bits, i, bitset.New(p.nt))
					}
					kb.bits[i].Add(t)
				}
			}
		}
	}
}

func (m *Model) indexOfferings(p *pool) {
	type pair struct{ zone, ct int32 }
	index := map[pair]int{}
	var pairs []pair
	for _, it := range p.types {
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			pr := pair{m.vals.id(o.Zone), m.vals.id(o.CapacityType)}
			if _, ok := index[pr]; !ok {
				index[pr] = len(pairs)
				pairs = append(pairs, pr)
			}
		}
	}
	// Order pairs by (zone, capacity type) name so that indexes are deterministic.
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := cmp.Compare(m.vals.str(a.zone), m.vals.str(b.zone)); c != 0 {
			return c
		}
		return cmp.Compare(m.vals.str(a.ct), m.vals.str(b.ct))
	})
	for i, pr := range pairs {
		index[pr] = i
		p.pairZone = append(p.pairZone, pr.zone)
		p.pairCT = append(p.pairCT, pr.ct)
		p.pairBits = append(p.pairBits, bitset.New(p.nt))
		prices := make([]float64, p.nt)
		for t := range prices {
			prices[t] = math.Inf(1)
		}
		p.pairPrice = append(p.pairPrice, prices)
	}
	for t, it := range p.types {
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			i := index[pair{m.vals.id(o.Zone), m.vals.id(o.CapacityType)}]
			p.pairBits[i].Add(t)
			p.pairPrice[i][t] = min(p.pairPrice[i][t], o.Price)
		}
	}
}

// typeMask returns the types whose requirements intersect reqs on every key
// the types constrain (zone and capacity type excepted: see offeringMask).
func (m *Model) typeMask(p *pool, reqs creqs) bitset.Set {
	mask := bitset.Full(p.nt)
	for i := range reqs {
		kb := p.typeKeys[reqs[i].key]
		if kb == nil {
			continue
		}
		mask.And(m.keyMask(p, kb, &reqs[i]))
	}
	return mask
}

// keyMask returns the types compatible with one requirement on a type key.
func (m *Model) keyMask(p *pool, kb *keyBits, r *creq) bitset.Set {
	mask := kb.undefined.Copy()
	if r.absent {
		mask.Or(kb.absentOK)
	}
	if !r.complement {
		for _, v := range r.vals {
			if i, ok := slices.BinarySearch(kb.vals, v); ok {
				mask.Or(kb.bits[i])
			}
		}
	} else {
		for i, v := range kb.vals {
			if r.has(m.vals, v) {
				mask.Or(kb.bits[i])
			}
		}
	}
	for i, t := range kb.complex {
		if x := intersect(m.vals, r, &kb.complexRq[i]); x.satisfiable() {
			mask.Add(int(t))
		}
	}
	return mask
}

// allowedPairs returns the offering pairs whose zone and capacity type reqs admit.
func (m *Model) allowedPairs(p *pool, reqs creqs) bitset.Set {
	set := bitset.New(len(p.pairZone))
	zr, hasZ := reqs.get(m.zoneKey)
	cr, hasC := reqs.get(m.ctKey)
	for i := range p.pairZone {
		if (!hasZ || zr.has(m.vals, p.pairZone[i])) && (!hasC || cr.has(m.vals, p.pairCT[i])) {
			set.Add(i)
		}
	}
	return set
}

// offeringMask returns the types with an available offering at one of the pairs.
func (m *Model) offeringMask(p *pool, pairs bitset.Set) bitset.Set {
	mask := bitset.New(p.nt)
	for i := pairs.First(); i >= 0; i = pairs.Next(i + 1) {
		mask.Or(p.pairBits[i])
	}
	return mask
}

// price returns a type's cheapest available offering among pairs, or +Inf.
func (p *pool) price(t int, pairs bitset.Set, all bool) float64 {
	if all {
		return p.minPrice[t]
	}
	best := math.Inf(1)
	for i := pairs.First(); i >= 0; i = pairs.Next(i + 1) {
		best = min(best, p.pairPrice[i][t])
	}
	return best
}

// finishPool runs once daemonset overhead is known: it subtracts the overhead
// from allocatable, drops types left without room, and builds the fit index.
func (m *Model) finishPool(p *pool) {
	dims := m.res.Len()
	p.largest = m.res.New()
	for t := range p.nt {
		p.effAlloc[t].Sub(p.daemon[t])
		for d := range dims {
			if p.effAlloc[t][d] < 0 {
				p.viable.Remove(t)
			}
		}
	}
	p.fit = make([]dimIndex, dims)
	order := make([]int, 0, p.nt)
	for d := range dims {
		order = order[:0]
		for t := p.viable.First(); t >= 0; t = p.viable.Next(t + 1) {
			order = append(order, t)
			p.largest[d] = max(p.largest[d], p.effAlloc[t][d])
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(p.effAlloc[b][d], p.effAlloc[a][d]) })
		var di dimIndex
		acc := bitset.New(p.nt)
		for i := 0; i < len(order); {
			v := p.effAlloc[order[i]][d]
			for i < len(order) && p.effAlloc[order[i]][d] == v {
				acc.Add(order[i])
				i++
			}
			di.thresholds = append(di.thresholds, v)
			di.geq = append(di.geq, acc.Copy())
		}
		slices.Reverse(di.thresholds)
		slices.Reverse(di.geq)
		p.fit[d] = di
	}
	p.hull = buildHull(p)
}

// fitMask narrows dst to the viable types with room for requests.
func (p *pool) fitMask(dst bitset.Set, requests resources.Vector) {
	for d, need := range requests {
		if need <= 0 {
			continue
		}
		di := &p.fit[d]
		i, _ := slices.BinarySearch(di.thresholds, need)
		if i == len(di.thresholds) {
			clear(dst)
			return
		}
		dst.And(di.geq[i])
	}
}

func (m *Model) indexLimits(p *pool, np NodePool) {
	if p.np == nil {
		return
	}
	p.usage = m.res.New()
	p.usageGiven = np.Usage != nil
	if np.Usage != nil {
		_ = m.res.AddTo(p.usage, np.Usage) // unparsable usage counts as zero
		if q, ok := np.Usage[nodesResource]; ok {
			p.usageNodes = q.Value()
		}
	}
	p.limits = m.res.New()
	for d := range p.limits {
		p.limits[d] = -1
	}
	for name, q := range p.np.Spec.Limits {
		if name == nodesResource {
			p.limitNodes = q.Value()
			p.hasLimits = true
			continue
		}
		d, ok := m.res.Dim(name)
		if !ok {
			continue
		}
		a, err := resources.Amount(name, q)
		if err != nil {
			continue
		}
		p.limits[d] = a
		p.hasLimits = true
	}
}

// nodesResource is the pseudo-resource NodePool limits use to cap node count.
const nodesResource corev1.ResourceName = "nodes"
