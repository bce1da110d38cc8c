package disruption

import (
	"runtime"
	"slices"
	"time"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Decide takes one decision on the input: it tries repair, emptiness,
// drift, multi-node and single-node consolidation in that order and
// returns the first command found, with every skip and the budgets it saw.
func Decide(in Input, opts Options) Outcome {
	p := newPass(in, opts)
	out := Outcome{Durations: map[Method]time.Duration{}, Eligible: p.eligible()}
	var consolidation []*Candidate
	methods := []struct {
		method Method
		run    func() *Command
	}{
		{MethodRepair, p.repair},
		{MethodEmptiness, p.emptiness},
		{MethodDrift, p.drift},
		{MethodMultiNode, func() *Command {
			consolidation = p.consolidationCandidates()
			return p.multiNode(consolidation)
		}},
		{MethodSingleNode, func() *Command {
			if consolidation == nil {
				consolidation = p.consolidationCandidates()
			}
			return p.singleNode(consolidation, runtime.GOMAXPROCS(0))
		}},
	}
	for _, m := range methods {
		if in.SkipConsolidation && (m.method == MethodMultiNode || m.method == MethodSingleNode) {
			continue
		}
		if len(opts.Methods) > 0 && !slices.Contains(opts.Methods, m.method) {
			continue
		}
		start := p.started()
		cmd := m.run()
		// Repair is no Karpenter disruption method: its duration (a
		// lookup, and one simulation when a node is due) is not reported.
		if p.opts.Clock != nil && m.method != MethodRepair {
			out.Durations[m.method] = p.opts.Clock.Since(start)
		}
		if cmd != nil {
			out.Command = cmd
			break
		}
	}
	// What consolidation means to remove, on the passes it runs: not when
	// a repair, emptiness or drift command comes first (it waits for no
	// extra search), nor when consolidation is skipped.
	consolidating := out.Command == nil || out.Command.Method == MethodMultiNode || out.Command.Method == MethodSingleNode
	if opts.ReportRemovable && consolidating && !in.SkipConsolidation && (len(opts.Methods) == 0 || slices.Contains(opts.Methods, MethodMultiNode)) {
		out.Removable, out.RemovableKnown = p.removable(consolidation)
	}
	out.Blocked = p.blocked
	out.Scores = p.scores
	out.Held = p.held
	out.InvalidAnnotations = p.invalid
	out.TimedOut = p.timedOut
	out.Budgets = p.budgetStatuses()
	return out
}

// eligible counts the candidates of each reason.
func (p *pass) eligible() map[v1.DisruptionReason]int {
	out := map[v1.DisruptionReason]int{}
	for _, c := range p.candidates {
		reasons := []v1.DisruptionReason{}
		if emptyCandidate(c) {
			reasons = append(reasons, v1.DisruptionReasonEmpty)
		}
		if c.Drifted {
			reasons = append(reasons, v1.DisruptionReasonDrifted)
		}
		if ok, _ := consolidatable(c); ok {
			reasons = append(reasons, v1.DisruptionReasonUnderutilized)
		}
		for _, r := range reasons {
			out[r]++
			p.budget(c.NodePool.Name, r).eligible++
		}
	}
	return out
}

// budgetStatuses reports every pool's budget for every budgeted reason,
// ordered by pool name.
func (p *pass) budgetStatuses() []BudgetStatus {
	names := make([]string, 0, len(p.pools))
	for name := range p.pools {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []BudgetStatus
	for _, name := range names {
		pi := p.pools[name]
		if pi.np.DeletionTimestamp != nil {
			continue
		}
		for _, reason := range budgetedReasons() {
			b := p.budget(name, reason)
			out = append(out, BudgetStatus{NodePool: pi.np, Reason: reason, Allowed: b.allowed, Nodes: p.numNodes[name], Eligible: b.eligible, Blocked: b.blocked, Err: b.err})
		}
	}
	return out
}

// Candidates returns the nodes that pass every guard, in the order the
// methods consider them (highest savings per unit of disruption cost
// first), to explain decisions.
func Candidates(in Input, opts Options) []*Candidate { return newPass(in, opts).candidates }
