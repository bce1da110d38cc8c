package whatif

import (
	"fmt"
	"strings"
	"time"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
)

// budgetWindow describes a budget at now: whether it is active, what it
// allows out of numNodes, and when that changes. Schedules are read in UTC
// with the parser disruption uses.
func budgetWindow(b v1.Budget, now time.Time, numNodes int) BudgetWindow {
	w := BudgetWindow{Reasons: "all", Nodes: b.Nodes.String()}
	if len(b.Reasons) > 0 {
		var rs []string
		for _, r := range b.Reasons {
			rs = append(rs, string(r))
		}
		w.Reasons = strings.Join(rs, ",")
	}
	if n, err := disruption.BudgetNodes(b.Nodes, numNodes); err == nil {
		w.Allows = n
	}
	active, err := disruption.BudgetIsActive(b, now)
	w.Active = active
	switch {
	case err != nil:
		w.Change = "cannot be evaluated (counts as 0, fail closed): " + err.Error()
		w.Allows = 0
		return w
	case b.Schedule == nil:
		w.Change = "always active"
		return w
	}
	w.Schedule, w.Duration = *b.Schedule, b.Duration.Duration.String()
	schedule, err := disruption.CronParser().Parse(*b.Schedule)
	if err != nil {
		w.Change = "cannot be evaluated: " + err.Error()
		return w
	}
	now = now.UTC()
	if active {
		// The window that is open started at the first firing after
		// now-duration; it may be extended by later firings that overlap it.
		end := schedule.Next(now.Add(-b.Duration.Duration)).Add(b.Duration.Duration)
		for next := schedule.Next(now); !next.After(end) && !next.IsZero(); next = schedule.Next(next) {
			end = next.Add(b.Duration.Duration)
		}
		w.Change = fmt.Sprintf("active until %s (in %s)", end.Format(time.RFC3339), end.Sub(now).Round(time.Second))
		return w
	}
	next := schedule.Next(now)
	w.Change = fmt.Sprintf("inactive until %s (in %s), then active for %s", next.Format(time.RFC3339), next.Sub(now).Round(time.Second), b.Duration.Duration)
	return w
}
