package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Unlimited is the budget of a reason that no active budget constrains.
const Unlimited = math.MaxInt32

// DefaultBudget is the budget of a NodePool without the budgets field: 10% of
// its nodes, rounded up, as the v1 API defaults it.
func DefaultBudget() v1.Budget {
	return v1.Budget{Nodes: intstr.FromString("10%")}
}

// BudgetBlockedMessage is the message of the event the disruption controller
// publishes on a NodePool whose budgets allow no disruption for reason.
func BudgetBlockedMessage(reason v1.DisruptionReason) string {
	return fmt.Sprintf("No allowed disruptions for disruption reason %s due to blocking budget", reason)
}

// CronParser parses budget schedules: the standard five-field cron
// expressions and the @daily-style descriptors the API's pattern admits.
func CronParser() cron.Parser {
	return cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
}

// BudgetIsActive reports whether a budget applies at now. A budget without
// a schedule always applies; one with a schedule applies for its duration
// after each time the schedule (in UTC) fires. An error means the schedule
// or duration cannot be evaluated (for example a cron expression that
// slipped past validation); callers fail closed.
func BudgetIsActive(b v1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil && b.Duration == nil {
		return true, nil
	}
	if b.Schedule == nil || b.Duration == nil {
		return false, fmt.Errorf("budget must set both schedule and duration, or neither")
	}
	schedule, err := CronParser().Parse(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("parsing budget schedule %q: %w", *b.Schedule, err)
	}
	if b.Duration.Duration <= 0 {
		return false, fmt.Errorf("budget duration %s must be positive", b.Duration.Duration)
	}
	now = now.UTC()
	// The budget is active if the schedule fired within the last duration:
	// the first hit after now-duration is not after now.
	next := schedule.Next(now.Add(-b.Duration.Duration))
	return !next.IsZero() && !next.After(now), nil
}

// BudgetNodes is the number of nodes a budget allows out of numNodes: a
// count, or a percentage rounded up.
func BudgetNodes(nodes intstr.IntOrString, numNodes int) (int, error) {
	if nodes.Type == intstr.Int {
		if nodes.IntVal < 0 {
			return 0, fmt.Errorf("budget nodes %d must not be negative", nodes.IntVal)
		}
		return int(nodes.IntVal), nil
	}
	s := strings.TrimSpace(nodes.StrVal)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("budget nodes %q is not a percentage between 0%% and 100%%", s)
		}
		return (p*numNodes + 99) / 100, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q is neither a count nor a percentage", s)
	}
	return n, nil
}

// appliesTo reports whether a budget constrains the reason: a budget without
// reasons constrains all of them.
func appliesTo(b v1.Budget, reason v1.DisruptionReason) bool {
	if len(b.Reasons) == 0 {
		return true
	}
	for _, r := range b.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// NeverAllows reports whether the NodePool's budgets forbid disrupting any
// of its nodes for the reason at all times: a budget without a schedule
// that applies to the reason allows none ("0" or "0%"), or cannot be read
// (fail closed). Karpenter's documented way to turn consolidation off for a
// pool is such a budget.
func NeverAllows(np *v1.NodePool, reason v1.DisruptionReason) bool {
	for _, b := range np.Spec.Disruption.Budgets {
		if !appliesTo(b, reason) || b.Schedule != nil || b.Duration != nil {
			continue
		}
		if n, err := BudgetNodes(b.Nodes, 1); err != nil || n == 0 {
			return true
		}
	}
	return false
}

// BudgetLimit is the most restrictive active budget of the NodePool for the
// reason, evaluated against numNodes; Unlimited when none is active. A
// budget that cannot be evaluated counts as zero (fail closed) and is
// reported in the error, so that a malformed object disrupts nothing.
//
// Only an absent budgets field (nil; the API server defaults it, so only
// objects built in memory have one) gets DefaultBudget. An explicit
// `budgets: []` has no budget, so nothing limits disruption, as in Karpenter,
// whose limit is the minimum over the budgets starting from unlimited.
func BudgetLimit(np *v1.NodePool, reason v1.DisruptionReason, now time.Time, numNodes int) (int, error) {
	budgets := np.Spec.Disruption.Budgets
	if budgets == nil {
		budgets = []v1.Budget{DefaultBudget()}
	}
	limit := Unlimited
	var firstErr error
	for i, b := range budgets {
		if !appliesTo(b, reason) {
			continue
		}
		active, err := BudgetIsActive(b, now)
		if err == nil && active {
			var n int
			n, err = BudgetNodes(b.Nodes, numNodes)
			if err == nil {
				limit = min(limit, n)
				continue
			}
		}
		if err != nil {
			limit = 0
			if firstErr == nil {
				firstErr = fmt.Errorf("nodepool %s budget %d: %w", np.Name, i, err)
			}
		}
	}
	return limit, firstErr
}

// AllowedDisruptions is how many more nodes of the NodePool may be
// disrupted now for the reason: the budget limit over the pool's
// initialized nodes, minus the nodes already being disrupted, never below
// zero.
func AllowedDisruptions(np *v1.NodePool, reason v1.DisruptionReason, now time.Time, numNodes, disrupting int) (int, error) {
	limit, err := BudgetLimit(np, reason, now, numNodes)
	if limit == Unlimited {
		return Unlimited, err
	}
	return max(limit-disrupting, 0), err
}
