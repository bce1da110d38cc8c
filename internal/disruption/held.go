package disruption

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// windowHorizon bounds the search for the time a budget lets a held node go:
// schedules are followed this far ahead (a month covers the weekly and
// monthly maintenance windows budgets are written for).
const windowHorizon = 31 * 24 * time.Hour

// maxFiresPerBudget bounds the schedule hits followed per budget (a
// schedule firing every minute is followed for about three days).
const maxFiresPerBudget = 5000

// Held is a candidate a disruption method would have taken for Reason but
// that the NodePool's budgets turned away in this pass.
type Held struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	NodePool  *v1.NodePool
	Reason    v1.DisruptionReason
	// Budget is the index of the binding budget in spec.disruption.budgets:
	// the active budget for the reason that allows the fewest nodes. -1
	// when the pool has no budgets field (the default budget binds).
	Budget int
	// Limit is how many of Nodes the budgets allow disrupted at once now.
	Limit, Nodes int
	// Busy counts the pool's nodes already being disrupted, or taken by
	// this pass's own command, which use up Limit.
	Busy int
	// OpensAt is the first time the budgets' schedules allow more than
	// Busy nodes (with today's node counts); zero when no schedule does so
	// within a month.
	OpensAt time.Time
	// Err is set when a budget could not be evaluated (it then allows
	// nothing).
	Err error
}

// hold records that a budget turned the candidate away for the reason,
// once per candidate and reason.
func (p *pass) hold(c *Candidate, reason v1.DisruptionReason) {
	key := c.NodeClaimName() + "/" + string(reason)
	if p.holds == nil {
		p.holds = map[string]bool{}
	}
	if p.holds[key] {
		return
	}
	p.holds[key] = true
	np := c.NodePool
	pool := np.Name
	b := p.budget(pool, reason)
	h := Held{Node: c.Node, NodeClaim: c.NodeClaim, NodePool: np, Reason: reason, Nodes: p.numNodes[pool], Busy: p.disrupting[pool] + b.used}
	h.Budget, h.Limit, h.Err = BindingBudget(np, reason, p.now, h.Nodes)
	if h.Err == nil {
		// The same for every held candidate of the pool with these counts:
		// followed once per pass, not once per node (a schedule firing every
		// minute is thousands of steps).
		wk := fmt.Sprintf("%s/%s/%d/%d", pool, reason, h.Nodes, h.Busy)
		opens, ok := p.windows[wk]
		if !ok {
			opens = NextWindow(np, reason, p.now, h.Nodes, h.Busy)
			if p.windows == nil {
				p.windows = map[string]time.Time{}
			}
			p.windows[wk] = opens
		}
		h.OpensAt = opens
	}
	p.held = append(p.held, h)
}

// BindingBudget returns the index of the budget that sets the NodePool's
// limit for the reason now (the active, applicable budget allowing the
// fewest nodes; the first of equals), and that limit. The index is -1 when
// the pool has no budgets field and DefaultBudget binds, and the limit is
// Unlimited when no budget is active. An error names a budget that cannot
// be evaluated (it allows nothing).
func BindingBudget(np *v1.NodePool, reason v1.DisruptionReason, now time.Time, numNodes int) (index, limit int, err error) {
	budgets := np.Spec.Disruption.Budgets
	if budgets == nil {
		n, err := BudgetNodes(DefaultBudget().Nodes, numNodes)
		return -1, n, err
	}
	index, limit = -1, Unlimited
	for i, b := range budgets {
		if !appliesTo(b, reason) {
			continue
		}
		active, err := BudgetIsActive(b, now)
		if err != nil {
			return i, 0, fmt.Errorf("nodepool %s budget %d: %w", np.Name, i, err)
		}
		if !active {
			continue
		}
		n, err := BudgetNodes(b.Nodes, numNodes)
		if err != nil {
			return i, 0, fmt.Errorf("nodepool %s budget %d: %w", np.Name, i, err)
		}
		if n < limit {
			index, limit = i, n
		}
	}
	return index, limit, nil
}

// NextWindow is the first time after now at which the NodePool's budgets
// allow more than busy nodes to be disrupted for the reason, assuming the
// pool keeps numNodes nodes: the start or end of a scheduled budget's
// window, followed for up to a month. It is zero when no schedule opens
// one (a budget without schedule holds the node until the nodes being
// disrupted are gone, or the budgets change).
func NextWindow(np *v1.NodePool, reason v1.DisruptionReason, now time.Time, numNodes, busy int) time.Time {
	var changes []time.Time
	for _, b := range np.Spec.Disruption.Budgets {
		if b.Schedule == nil || b.Duration == nil || b.Duration.Duration <= 0 || !appliesTo(b, reason) {
			continue
		}
		schedule, err := CronParser().Parse(*b.Schedule)
		if err != nil {
			continue
		}
		d := b.Duration.Duration
		// Every hit whose window is open after now: its start and its end
		// are the times the budget switches on and off.
		at := now.UTC().Add(-d)
		for range maxFiresPerBudget {
			at = schedule.Next(at)
			if at.IsZero() || at.After(now.Add(windowHorizon)) {
				break
			}
			for _, t := range []time.Time{at, at.Add(d)} {
				if t.After(now) {
					changes = append(changes, t)
				}
			}
		}
	}
	slices.SortFunc(changes, func(a, b time.Time) int { return a.Compare(b) })
	changes = slices.CompactFunc(changes, time.Time.Equal)
	for _, t := range changes {
		if limit, err := BudgetLimit(np, reason, t, numNodes); err == nil && limit > busy {
			return t
		}
	}
	return time.Time{}
}

// Message explains the hold for an event on the node, naming the binding
// budget (its nodes, reasons and schedule) and when its window opens.
func (h Held) Message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Disruption for reason %s held by NodePool %s's ", h.Reason, h.NodePool.Name)
	if h.Err != nil {
		fmt.Fprintf(&b, "budgets: a budget cannot be evaluated and allows nothing: %v", h.Err)
		return b.String()
	}
	if h.Budget < 0 && h.NodePool.Spec.Disruption.Budgets != nil {
		b.WriteString("budgets")
	} else {
		b.WriteString(describeBudget(h.NodePool, h.Budget))
	}
	fmt.Fprintf(&b, ": allows %d of %d nodes now, %d taken by disruptions in progress or this decision", min(h.Limit, h.Nodes), h.Nodes, h.Busy)
	switch {
	case !h.OpensAt.IsZero():
		fmt.Fprintf(&b, "; its disruption window opens at %s", h.OpensAt.UTC().Format(time.RFC3339))
	case h.Limit > 0:
		b.WriteString("; it allows more once those disruptions finish")
	default:
		b.WriteString("; no budget schedule opens a window within 31 days")
	}
	return b.String()
}

// describeBudget names budget i of the pool with its nodes, reasons and
// schedule, for example `budget 1 (nodes "0", reasons [Underutilized],
// schedule "0 9 * * mon-fri" for 8h0m0s)`.
func describeBudget(np *v1.NodePool, i int) string {
	if i < 0 || i >= len(np.Spec.Disruption.Budgets) {
		nodes := DefaultBudget().Nodes
		return fmt.Sprintf("default budget (nodes %q, all reasons, no schedule)", nodes.String())
	}
	bg := np.Spec.Disruption.Budgets[i]
	reasons := "all reasons"
	if len(bg.Reasons) > 0 {
		reasons = fmt.Sprintf("reasons %v", bg.Reasons)
	}
	schedule := "no schedule"
	if bg.Schedule != nil && bg.Duration != nil {
		schedule = fmt.Sprintf("schedule %q for %s", *bg.Schedule, bg.Duration.Duration)
	}
	return fmt.Sprintf("budget %d (nodes %q, %s, %s)", i, bg.Nodes.String(), reasons, schedule)
}
