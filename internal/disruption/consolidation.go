package disruption

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// noCheaperMessage explains a candidate consolidation cannot delete or replace.
const noCheaperMessage = "Can't replace with a cheaper node"

// consolidatable reports whether a candidate may be consolidated (deleted
// or replaced because it is under-used), and if not, whether that deserves
// an event: only nodes the user expects consolidation to consider get one.
func consolidatable(c *Candidate) (ok bool, why string) {
	d := c.NodePool.Spec.Disruption
	switch {
	case !d.ConsolidationPolicy.ConsolidatesUnderutilized(), d.ConsolidateAfter.IsNever():
		return false, ""
	case !c.Consolidatable, c.Empty():
		return false, "" // not yet, or emptiness handles it
	case c.InstanceType == nil:
		return false, "Instance type of the node is not offered by its NodePool any more, its price is unknown"
	case !c.PriceKnown || c.Zone == "" || c.CapacityType == "":
		return false, fmt.Sprintf("Price of the node's offering (%s, %s, %s) is unknown", c.InstanceType.Name, c.Zone, c.CapacityType)
	}
	return true, ""
}

// consolidationCandidates are the candidates consolidation may act on, best
// first; it records why the others that it might have taken are not.
func (p *pass) consolidationCandidates() []*Candidate {
	var out []*Candidate
	for _, c := range p.candidates {
		ok, why := consolidatable(c)
		if ok {
			out = append(out, c)
		} else if why != "" {
			p.block(c.Machine, ReasonUnconsolidatable, why)
		}
	}
	return out
}

// computeConsolidation asks whether the candidates' pods fit on the rest of
// the cluster plus at most one new node that is strictly cheaper than the
// candidates together (with MultiNodeReplacements, for multi-node: or
// several new nodes, fewer than the candidates, strictly cheaper together,
// saving enough for what they disrupt).
// It returns the command (delete, or replace), or nil and why not.
func (p *pass) computeConsolidation(cands []*Candidate, method Method) (*Command, string) {
	if method == MethodMultiNode && p.opts.MultiNodeReplacements && len(cands) > 2 {
		// Fewer nodes than it removes, checked on the plan rather than
		// capped in the simulation: an uncapped solve bin-packs the new
		// claims, a capped one places pods greedily, which leaves the tail
		// of a re-pack on one small node per pod.
		// The re-pack first keeps off the other nodes consolidation may
		// take next: a pod moved onto one of them would be moved again
		// when a later command removes it (with the gate, that made 1.5
		// to 2.7 evictions per pod that had to move). When such a re-pack
		// is no move, the re-pack onto any node, then the one-replacement
		// move, are tried as without the gate. A re-pack into several
		// nodes must also pass the Balanced score (repackScored).
		if others := p.otherConsolidationCandidates(cands); len(others) > 0 {
			if cmd, _ := p.consolidationWith(cands, method, len(cands)-1, others); p.repackAllowed(cmd) {
				return cmd, ""
			}
		}
		if cmd, _ := p.consolidationWith(cands, method, len(cands)-1, nil); p.repackAllowed(cmd) {
			return cmd, ""
		}
	}
	return p.consolidationWith(cands, method, 1, nil)
}

// repackAllowed reports whether a move found with several replacements
// allowed may be taken: it exists, and if it does launch several nodes,
// its score passes (repackScored).
func (p *pass) repackAllowed(cmd *Command) bool {
	return cmd != nil && (len(cmd.Replacements) < 2 || p.repackScored(cmd))
}

// otherConsolidationCandidates names the nodes, other than cands, that
// consolidation could take in a later command.
func (p *pass) otherConsolidationCandidates(cands []*Candidate) []string {
	var out []string
	for _, c := range p.candidates {
		if ok, _ := consolidatable(c); ok && !slices.Contains(cands, c) {
			out = append(out, c.Name())
		}
	}
	return out
}

// consolidationWith is computeConsolidation with at most maxClaims new
// nodes, giving no pod to the avoided nodes; above one claim, the
// simulation is not capped and a plan needing more is refused.
func (p *pass) consolidationWith(cands []*Candidate, method Method, maxClaims int, avoid []string) (*Command, string) {
	price, allSpot := 0.0, true
	for _, c := range cands {
		price += c.Price
		allSpot = allSpot && c.CapacityType == v1.CapacityTypeSpot
	}
	simCap := &maxClaims
	if maxClaims > 1 {
		simCap = nil
	}
	sim := p.simulate(cands, avoid, simCap, price, false)
	if sim.failed != "" {
		return nil, noCheaperMessage + ": " + sim.failed
	}
	// A move that takes the room of a pod that will move anyway only
	// hands that pod to provisioning for a new node.
	if why := p.takesRoom(sim); why != "" {
		return nil, noCheaperMessage + ": " + why
	}
	cmd := &Command{Method: method, Reason: v1.DisruptionReasonUnderutilized, Candidates: cands, PriceBefore: price, Plan: sim.plan, AvoidedNodes: avoid}
	switch n := len(sim.replacements); {
	case n == 0:
		return cmd, ""
	case n > maxClaims && maxClaims == 1:
		return nil, fmt.Sprintf("pods need %d new nodes, consolidation launches at most one", n)
	case n > maxClaims:
		return nil, fmt.Sprintf("pods need %d new nodes, consolidation launches at most %d", n, maxClaims)
	}
	// Each replacement may cost its planned price plus an equal share of
	// what the plan saves, so that whichever of its types is launched, the
	// replacements together cost strictly less than the candidates.
	planned := 0.0
	for _, r := range sim.replacements {
		planned += r.Price
	}
	if planned >= price {
		return nil, noCheaperMessage
	}
	share := (price - planned) / float64(len(sim.replacements))
	rules := replacementRules{
		multiNode: method == MethodMultiNode,
		// Karpenter's rule that a multi-node replacement may not be of a
		// candidate's type (delete the others instead) is for one
		// replacement: a re-pack into several nodes often keeps a type
		// some candidate has.
		sameType: method == MethodMultiNode && len(sim.replacements) == 1,
	}
	for _, r := range sim.replacements {
		claim, why := p.cheaperReplacement(r, cands, r.Price+share, allSpot, rules)
		if claim == nil {
			return nil, why
		}
		pi := p.pools[claim.NodePool]
		cmd.Replacements = append(cmd.Replacements, &Replacement{NodePool: pi.np, Claim: claim})
		cmd.PriceAfter += claim.Price
	}
	return cmd, ""
}

// replacementRules are the method-dependent rules cheaperReplacement
// applies: multiNode lifts single-node's minimum of 15 cheaper spot types,
// and sameType drops the types of the candidates (unless cheaper than them).
type replacementRules struct{ multiNode, sameType bool }

// cheaperReplacement narrows a planned replacement to instance types whose
// offering is strictly cheaper than the candidates, with Karpenter's
// capacity-type rules: a replacement of on-demand nodes that may be spot is
// pinned to spot (its price was compared with spot offerings; failing
// that, to on-demand), a replacement of spot nodes by spot needs the
// SpotToSpotConsolidation option and, for a single node, at least 15
// cheaper types (launching at most 15), and a multi-node replacement may
// not be the type of one of the candidates unless cheaper than it (delete
// the others instead).
func (p *pass) cheaperReplacement(claim *simulator.NewNodeClaim, cands []*Candidate, price float64, allSpot bool, rules replacementRules) (*simulator.NewNodeClaim, string) {
	ct, hasCT := claim.Requirements.Get(v1.CapacityTypeLabelKey)
	spotOK := !hasCT || ct.Has(v1.CapacityTypeSpot)
	odOK := !hasCT || ct.Has(v1.CapacityTypeOnDemand)
	var pins []string
	switch {
	case allSpot && spotOK:
		if !p.opts.SpotToSpotConsolidation {
			return nil, "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
		}
		pins = []string{v1.CapacityTypeSpot}
	case spotOK && odOK:
		pins = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}
	default:
		pins = []string{""}
	}
	why := noCheaperMessage
	for _, pin := range pins {
		reqs := claim.Requirements
		if pin != "" {
			reqs = reqs.Add(requirements.In(v1.CapacityTypeLabelKey, pin))
		}
		options, prices := cheaperOptions(claim.InstanceTypes, reqs, price)
		if rules.sameType {
			options, prices = withoutCandidateTypes(options, prices, cands)
		}
		if pin == v1.CapacityTypeSpot && allSpot {
			if !rules.multiNode && len(options) < minSpotToSpotOptions {
				return nil, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d",
					minSpotToSpotOptions, len(options))
			}
			limit := minSpotToSpotOptions
			if r, ok := reqs.Get(corev1.LabelInstanceTypeStable); ok {
				limit = max(limit, r.MinValues())
			}
			options, prices = options[:min(len(options), limit)], prices[:min(len(prices), limit)]
		}
		if len(options) == 0 {
			continue
		}
		if msg := unmetMinValues(reqs, options); msg != "" {
			why = msg
			continue
		}
		out := *claim
		out.InstanceTypes = options
		out.Price = prices[0]
		names := make([]string, len(options))
		for i, it := range options {
			names[i] = it.Name
		}
		typeReq := requirements.In(corev1.LabelInstanceTypeStable, names...)
		if r, ok := reqs.Get(corev1.LabelInstanceTypeStable); ok {
			typeReq = typeReq.WithMinValues(r.MinValues())
		}
		out.Requirements = reqs.Without(corev1.LabelInstanceTypeStable).Add(typeReq)
		return &out, ""
	}
	return nil, why
}

// cheaperOptions keeps the types whose cheapest available offering that the
// requirements allow costs strictly less than price, cheapest first.
func cheaperOptions(types []*cloudprovider.InstanceType, reqs requirements.Requirements, price float64) ([]*cloudprovider.InstanceType, []float64) {
	type option struct {
		it    *cloudprovider.InstanceType
		price float64
	}
	var opts []option
	for _, it := range types {
		o, ok := it.CheapestOffering(func(o cloudprovider.Offering) bool {
			return allows(reqs, corev1.LabelTopologyZone, o.Zone) && allows(reqs, v1.CapacityTypeLabelKey, o.CapacityType)
		})
		if ok && o.Price < price {
			opts = append(opts, option{it, o.Price})
		}
	}
	slices.SortStableFunc(opts, func(a, b option) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.it.Name, b.it.Name))
	})
	out, prices := make([]*cloudprovider.InstanceType, len(opts)), make([]float64, len(opts))
	for i, o := range opts {
		out[i], prices[i] = o.it, o.price
	}
	return out, prices
}

func allows(reqs requirements.Requirements, key, value string) bool {
	r, ok := reqs.Get(key)
	return !ok || r.Has(value)
}

// withoutCandidateTypes drops options that cost as much as the cheapest
// candidate of a type among the options: replacing several nodes with one
// of a type we already run is better done by keeping that node and
// deleting the others (fewer pods move).
func withoutCandidateTypes(types []*cloudprovider.InstanceType, prices []float64, cands []*Candidate) ([]*cloudprovider.InstanceType, []float64) {
	existing := map[string]float64{}
	for _, c := range cands {
		if cur, ok := existing[c.InstanceType.Name]; !ok || c.Price < cur {
			existing[c.InstanceType.Name] = c.Price
		}
	}
	limit := math.Inf(1)
	for _, it := range types {
		if p, ok := existing[it.Name]; ok {
			limit = min(limit, p)
		}
	}
	var outTypes []*cloudprovider.InstanceType
	var outPrices []float64
	for i, it := range types {
		if prices[i] < limit {
			outTypes, outPrices = append(outTypes, it), append(outPrices, prices[i])
		}
	}
	return outTypes, outPrices
}

// unmetMinValues says which minValues the options no longer cover, or "".
func unmetMinValues(reqs requirements.Requirements, options []*cloudprovider.InstanceType) string {
	for _, r := range reqs.List() {
		if r.MinValues() == 0 {
			continue
		}
		values := map[string]bool{}
		for _, it := range options {
			if own, ok := it.Requirements.Get(r.Key()); ok {
				for _, v := range own.Values() {
					if r.Has(v) {
						values[v] = true
					}
				}
			}
		}
		if len(values) < r.MinValues() {
			return fmt.Sprintf("Cheaper instance types cover %d values of %s, minValues is %d", len(values), r.Key(), r.MinValues())
		}
	}
	return ""
}

// multiNode finds the largest prefix of the best candidates (within their
// pools' Underutilized budgets, at most MaxMultiNodeCandidates, at least
// two) whose pods fit on the rest of the cluster plus at most one cheaper
// node (with MultiNodeReplacements, or several, fewer than the prefix and
// cheaper together), by binary search on the prefix length.
func (p *pass) multiNode(cands []*Candidate) *Command {
	start := p.started()
	taken := map[string]int{}
	var prefix []*Candidate
	for _, c := range cands {
		b := p.budget(c.NodePool.Name, v1.DisruptionReasonUnderutilized)
		if taken[c.NodePool.Name] >= b.remaining() {
			// Not a hold: single-node consolidation may still take it.
			b.blocked = true
			continue
		}
		taken[c.NodePool.Name]++
		prefix = append(prefix, c)
		if len(prefix) == p.opts.MaxMultiNodeCandidates {
			break
		}
	}
	best, timedOut := p.longestPrefix(prefix, start, false)
	if timedOut {
		p.timedOut = append(p.timedOut, MethodMultiNode)
	}
	// The Balanced policy scores the move found, as Karpenter does, rather
	// than searching for the best-scoring prefix; single-node consolidation
	// still tries the candidates one by one.
	if best != nil && !p.scoreCommand(best) {
		return nil
	}
	return best
}

// longestPrefix is multi-node's search: the longest prefix of at least
// two of the candidates that computeConsolidation turns into a move, by
// binary search on its length (with wholeFirst, the whole list is tried
// first: the search is not monotone, and may stop short of a whole list
// that is a move). timedOut reports that MultiNodeTimeout, counted from
// start, cut the search short; best is then the longest move found so far.
func (p *pass) longestPrefix(prefix []*Candidate, start time.Time, wholeFirst bool) (best *Command, timedOut bool) {
	lo, hi := 2, len(prefix)
	if wholeFirst && hi >= lo {
		if cmd, _ := p.computeConsolidation(prefix, MethodMultiNode); cmd != nil {
			return cmd, false
		}
		hi--
	}
	for lo <= hi {
		if p.timeUp(start, p.opts.MultiNodeTimeout) {
			return best, true
		}
		mid := (lo + hi) / 2
		if cmd, _ := p.computeConsolidation(prefix[:mid], MethodMultiNode); cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, false
}

// removable is what consolidation means to remove, budgets aside: the
// Nodes of the longest prefix of the candidates (at least two; no cap, as
// the budgets will let consolidation take them over several commands) whose
// pods fit on the rest of the cluster plus what multi-node consolidation
// may launch, and whose move the Balanced pools among them would approve.
// The whole list is tried first, then multi-node's binary search: one
// prefix found too short would leave the nodes past it unmarked, and the
// pods evicted by the first command would land there. The budgets that
// hold those nodes back now let them go in later commands; until then,
// pods placed on them would be moved again. Nodes of a pool whose budgets
// never allow an Underutilized disruption are left out: nothing will
// remove them. complete is false when the search ran out of time, and the
// names then say nothing.
func (p *pass) removable(cands []*Candidate) (names []string, complete bool) {
	start := p.started()
	var prefix []*Candidate
	for _, c := range cands {
		if !NeverAllows(c.NodePool, v1.DisruptionReasonUnderutilized) {
			prefix = append(prefix, c)
		}
	}
	best, timedOut := p.longestPrefix(prefix, start, true)
	if timedOut {
		return nil, false
	}
	if best == nil {
		return nil, true
	}
	for _, s := range p.moveScores(best, isBalanced) {
		if !s.Approved {
			return nil, true
		}
	}
	for _, c := range best.Candidates {
		if c.Node != nil {
			names = append(names, c.Node.Name)
		}
	}
	return names, true
}

// singleNode tries the candidates one at a time, taking turns between
// NodePools in order of savings, and returns the first that can be deleted
// or replaced by a cheaper node. Candidates are simulated in parallel
// batches against the shared model; the first valid one in order wins.
func (p *pass) singleNode(cands []*Candidate, workers int) *Command {
	start := p.started()
	p.getModel() // built before the workers share it
	order := interleaveByPool(cands)
	workers = max(workers, 1)
	for i := 0; i < len(order); i += workers {
		if p.timeUp(start, p.opts.SingleNodeTimeout) {
			p.timedOut = append(p.timedOut, MethodSingleNode)
			return nil
		}
		batch := order[i:min(i+workers, len(order))]
		cmds, whys := make([]*Command, len(batch)), make([]string, len(batch))
		var wg sync.WaitGroup
		for j, c := range batch {
			if p.budget(c.NodePool.Name, v1.DisruptionReasonUnderutilized).remaining() <= 0 {
				whys[j] = "budget"
				continue
			}
			wg.Go(func() { cmds[j], whys[j] = p.computeConsolidation([]*Candidate{c}, MethodSingleNode) })
		}
		wg.Wait()
		for j, c := range batch {
			switch {
			case cmds[j] != nil && p.scoreCommand(cmds[j]):
				return cmds[j]
			case cmds[j] != nil:
				// Rejected by the Balanced score, which is recorded.
			case whys[j] == "budget":
				p.budget(c.NodePool.Name, v1.DisruptionReasonUnderutilized).blocked = true
				p.hold(c, v1.DisruptionReasonUnderutilized)
			default:
				p.block(c.Machine, ReasonUnconsolidatable, whys[j])
			}
		}
	}
	return nil
}

// interleaveByPool takes candidates from each NodePool in turn, keeping
// each pool's order, so one large pool does not starve the others.
func interleaveByPool(cands []*Candidate) []*Candidate {
	var pools []string
	byPool := map[string][]*Candidate{}
	for _, c := range cands {
		if _, ok := byPool[c.NodePool.Name]; !ok {
			pools = append(pools, c.NodePool.Name)
		}
		byPool[c.NodePool.Name] = append(byPool[c.NodePool.Name], c)
	}
	out := make([]*Candidate, 0, len(cands))
	for len(out) < len(cands) {
		for _, pool := range pools {
			if q := byPool[pool]; len(q) > 0 {
				out = append(out, q[0])
				byPool[pool] = q[1:]
			}
		}
	}
	return out
}
