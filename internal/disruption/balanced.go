package disruption

import (
	"fmt"
	"math"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Event reasons of Balanced consolidation, as Karpenter names them.
const (
	// ReasonConsolidationApproved: a Balanced pool's move scored at or above its threshold.
	ReasonConsolidationApproved = "ConsolidationApproved"
	// ReasonConsolidationRejected: a Balanced pool's move scored below its threshold.
	ReasonConsolidationRejected = "ConsolidationRejected"
)

// scoreTolerance absorbs float rounding at the threshold: a move whose score
// is within it below 1/k passes (a uniform pool's replacement by a node at
// half the price scores 0.5 exactly on paper, 0.49999999999999994 in float).
const scoreTolerance = 1e-9

// ConsolidationThreshold is k of the NodePool's Balanced policy: its
// consolidationThreshold, or DefaultConsolidationThreshold when unset (or
// below 1, which admission rejects).
func ConsolidationThreshold(np *v1.NodePool) int32 {
	if k := np.Spec.Disruption.ConsolidationThreshold; k != nil && *k >= 1 {
		return *k
	}
	return v1.DefaultConsolidationThreshold
}

// Score is the Balanced policy's score of a move (Karpenter v1.14): the
// share of the pool's cost it saves over the share of the pool's disruption
// cost it causes,
//
//	(savings / poolCost) / (disruption / poolDisruption).
//
// It never divides by zero: a move that saves nothing (or loses money), or
// a pool without a known cost, scores 0 (rejected at any threshold); a move
// that saves money and disrupts nothing scores +Inf (approved at any
// threshold). With the per-node disruption cost NodeDisruptionCost, which
// is at least 1, disruption is never zero in practice.
func Score(savings, poolCost, disruption, poolDisruption float64) float64 {
	if savings <= 0 || poolCost <= 0 {
		return 0
	}
	if disruption <= 0 {
		return math.Inf(1)
	}
	disruptionShare := 1.0
	if poolDisruption > 0 {
		disruptionShare = disruption / poolDisruption
	}
	return (savings / poolCost) / disruptionShare
}

// Approved reports whether a score passes the threshold 1/k.
// WhenEmptyOrUnderutilized behaves as k = +Inf (every move passes).
func Approved(score float64, k int32) bool {
	if k < 1 {
		k = v1.DefaultConsolidationThreshold
	}
	return score >= 1/float64(k)-scoreTolerance
}

// MoveScore is the Balanced policy's verdict on a consolidation move, for
// one NodePool whose nodes it disrupts (a multi-node move across pools is
// scored once per Balanced pool, against that pool's totals).
type MoveScore struct {
	NodePool *v1.NodePool
	Method   Method
	// Command is the move that was scored.
	Command *Command
	// Candidates are the move's nodes of this pool.
	Candidates []*Candidate
	// Savings is this pool's share of the hourly savings: its candidates'
	// price less the replacement's price in proportion to theirs.
	Savings float64
	// Disruption is NodeDisruptionCost summed over the pool's candidates.
	Disruption float64
	// PoolCost and PoolDisruption are the totals over the pool's nodes.
	PoolCost, PoolDisruption float64
	// Score is Score(Savings, PoolCost, Disruption, PoolDisruption).
	Score float64
	// Threshold is k; the move passes when Score >= 1/k.
	Threshold int32
	Approved  bool
}

// SavingsShare is Savings / PoolCost (0 without a pool cost).
func (s MoveScore) SavingsShare() float64 {
	if s.PoolCost <= 0 {
		return 0
	}
	return s.Savings / s.PoolCost
}

// DisruptionShare is Disruption / PoolDisruption (1 without a pool total).
func (s MoveScore) DisruptionShare() float64 {
	if s.PoolDisruption <= 0 {
		return 1
	}
	return s.Disruption / s.PoolDisruption
}

// Reason is ReasonConsolidationApproved or ReasonConsolidationRejected.
func (s MoveScore) Reason() string {
	if s.Approved {
		return ReasonConsolidationApproved
	}
	return ReasonConsolidationRejected
}

// Decision is "approved" or "rejected", the metrics label.
func (s MoveScore) Decision() string {
	if s.Approved {
		return "approved"
	}
	return "rejected"
}

// Message explains the verdict in one sentence, for example "Balanced
// consolidation score 3.33 >= threshold 0.50 (consolidationThreshold 2,
// savings 12.5% of the pool's cost, disruption 3.8% of the pool's
// disruption cost): Underutilized: deleting 1 node (...)".
func (s MoveScore) Message() string {
	op := ">="
	if !s.Approved {
		op = "<"
	}
	return fmt.Sprintf("Balanced consolidation score %.2f %s threshold %.2f (consolidationThreshold %d, savings %.1f%% of the pool's cost, "+
		"disruption %.1f%% of the pool's disruption cost): %s", s.Score, op, 1/float64(s.Threshold), s.Threshold,
		100*s.SavingsShare(), 100*s.DisruptionShare(), s.Command.String())
}

// NodeDisruptionCost is a node's disruption cost in the Balanced score: 1
// for the node itself plus the positive eviction costs of its pods (the
// RescheduleCost of its pods), so that it is never zero and a pool of one
// node deleted whole scores exactly 1.
func NodeDisruptionCost(c *Candidate) float64 { return RescheduleCost(c.Pods) }

// poolTotal is a NodePool's cost and disruption cost, summed over its nodes.
type poolTotal struct{ cost, disruption float64 }

// poolTotals sums, per NodePool, the hourly price and NodeDisruptionCost of
// every node that is staying: registered, not marked for deletion and not
// disrupted by a queued command. Nodes that are no candidates (inside
// consolidateAfter, guarded) count too, as in Karpenter.
func (p *pass) poolTotals() map[string]poolTotal {
	if p.totals != nil {
		return p.totals
	}
	p.totals = map[string]poolTotal{}
	for _, n := range p.in.Nodes {
		if n.NodeClaim == nil || n.Node == nil || n.MarkedForDeletion || p.in.Disrupting[n.NodeClaim.Name] {
			continue
		}
		pi := p.pools[n.NodePoolName()]
		if pi == nil {
			continue
		}
		c := p.newCandidate(n, pi, reschedulable(n.Pods))
		t := p.totals[pi.np.Name]
		t.cost += c.Price
		t.disruption += NodeDisruptionCost(c)
		p.totals[pi.np.Name] = t
	}
	return p.totals
}

// scoreCommand scores a consolidation command for every Balanced pool whose
// nodes it disrupts, records the scores, and reports whether every one of
// them approves it. A command that disrupts no Balanced pool's node is
// approved without a score.
func (p *pass) scoreCommand(cmd *Command) bool {
	approved := true
	for _, s := range p.moveScores(cmd, isBalanced) {
		approved = approved && s.Approved
		p.scores = append(p.scores, s)
	}
	return approved
}

// repackScored reports whether a re-pack into several nodes (a move only
// MultiNodeReplacements makes) scores at least 1/k for every NodePool whose
// nodes it disrupts and that has a cost, whatever its consolidation policy:
// k is 2 (DefaultConsolidationThreshold), or a Balanced pool's
// consolidationThreshold (only Balanced pools may set it). Such a re-pack
// can move thousands of pods, most of them already moved by the re-packs
// before it, to save a fraction of a percent; the score weighs what it
// saves against what it disrupts, as for a Balanced pool. A pool whose
// nodes cost nothing saves nothing either way and does not vote. The
// scores are not recorded: a re-pack that fails falls back to the other
// moves, which are.
func (p *pass) repackScored(cmd *Command) bool {
	for _, s := range p.moveScores(cmd, func(*v1.NodePool) bool { return true }) {
		if !s.Approved && s.PoolCost > 0 {
			return false
		}
	}
	return true
}

// isBalanced reports a NodePool of the Balanced policy.
func isBalanced(np *v1.NodePool) bool {
	return np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyBalanced
}

// moveScores scores a command once for each NodePool whose nodes it
// disrupts and that scored accepts, in the order the candidates name them.
func (p *pass) moveScores(cmd *Command, scored func(*v1.NodePool) bool) []MoveScore {
	var pools []string
	byPool := map[string][]*Candidate{}
	for _, c := range cmd.Candidates {
		if !scored(c.NodePool) {
			continue
		}
		if _, ok := byPool[c.NodePool.Name]; !ok {
			pools = append(pools, c.NodePool.Name)
		}
		byPool[c.NodePool.Name] = append(byPool[c.NodePool.Name], c)
	}
	scores := make([]MoveScore, 0, len(pools))
	for _, name := range pools {
		cands := byPool[name]
		s := MoveScore{NodePool: cands[0].NodePool, Method: cmd.Method, Command: cmd, Candidates: cands, Threshold: ConsolidationThreshold(cands[0].NodePool)}
		price := 0.0
		for _, c := range cands {
			price += c.Price
			s.Disruption += NodeDisruptionCost(c)
		}
		// The replacement's price is shared in proportion to the price of
		// the nodes it replaces.
		s.Savings = price
		if cmd.PriceBefore > 0 {
			s.Savings -= cmd.PriceAfter * price / cmd.PriceBefore
		}
		t := p.poolTotals()[name]
		s.PoolCost, s.PoolDisruption = t.cost, t.disruption
		s.Score = Score(s.Savings, s.PoolCost, s.Disruption, s.PoolDisruption)
		s.Approved = Approved(s.Score, s.Threshold)
		scores = append(scores, s)
	}
	return scores
}
