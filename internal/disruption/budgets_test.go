package disruption_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

func TestBudgetNodes(t *testing.T) {
	cases := map[string]struct {
		nodes    intstr.IntOrString
		numNodes int
		want     int
		wantErr  bool
	}{
		"count":                  {nodes: intstr.FromInt32(3), numNodes: 10, want: 3},
		"count as a string":      {nodes: intstr.FromString("3"), numNodes: 10, want: 3},
		"percentage rounds up":   {nodes: intstr.FromString("10%"), numNodes: 3, want: 1},
		"percentage exact":       {nodes: intstr.FromString("50%"), numNodes: 10, want: 5},
		"percentage of 11":       {nodes: intstr.FromString("50%"), numNodes: 11, want: 6},
		"zero percent":           {nodes: intstr.FromString("0%"), numNodes: 10, want: 0},
		"hundred percent":        {nodes: intstr.FromString("100%"), numNodes: 7, want: 7},
		"no nodes":               {nodes: intstr.FromString("10%"), numNodes: 0, want: 0},
		"negative count":         {nodes: intstr.FromInt32(-1), wantErr: true},
		"percentage above 100":   {nodes: intstr.FromString("150%"), wantErr: true},
		"neither count nor pct.": {nodes: intstr.FromString("many"), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := disruption.BudgetNodes(tc.nodes, tc.numNodes)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBudgetIsActive(t *testing.T) {
	cases := map[string]struct {
		budget  v1.Budget
		at      time.Time
		want    bool
		wantErr bool
	}{
		"no schedule":                 {budget: budget("1"), at: now, want: true},
		"inside the window":           {budget: scheduled("0", "0 11 * * *", 2*time.Hour), at: now, want: true},
		"at the start of the window":  {budget: scheduled("0", "0 12 * * *", time.Hour), at: now, want: true},
		"at the end of the window":    {budget: scheduled("0", "0 11 * * *", time.Hour), at: now, want: false},
		"before the window":           {budget: scheduled("0", "0 13 * * *", time.Hour), at: now, want: false},
		"weekday names, Monday":       {budget: scheduled("0", "0 10 * * mon-fri", 16*time.Hour), at: now, want: true},
		"weekday names, Saturday":     {budget: scheduled("0", "0 10 * * mon-fri", 16*time.Hour), at: now.AddDate(0, 0, 5), want: false},
		"window across midnight":      {budget: scheduled("0", "0 22 * * *", 4*time.Hour), at: now.Add(13 * time.Hour), want: true},
		"daily macro":                 {budget: scheduled("0", "@daily", 13*time.Hour), at: now, want: true},
		"hourly macro, always active": {budget: scheduled("0", "@hourly", time.Hour), at: now.Add(17 * time.Minute), want: true},
		"schedule is UTC":             {budget: scheduled("0", "0 12 * * *", time.Hour), at: now.In(time.FixedZone("UTC+5", 5*3600)), want: true},
		"invalid cron":                {budget: scheduled("0", "not a cron", time.Hour), at: now, wantErr: true},
		"hour out of range":           {budget: scheduled("0", "0 25 * * *", time.Hour), at: now, wantErr: true},
		"unsupported L field":         {budget: scheduled("0", "0 0 L * *", time.Hour), at: now, wantErr: true},
		"schedule without duration":   {budget: v1.Budget{Nodes: intstr.FromInt32(0), Schedule: new("@daily")}, at: now, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := disruption.BudgetIsActive(tc.budget, tc.at)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("active = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllowedDisruptions(t *testing.T) {
	cases := map[string]struct {
		budgets    []v1.Budget
		reason     v1.DisruptionReason
		at         time.Time
		numNodes   int
		disrupting int
		want       int
		wantErr    bool
	}{
		"default is 10% rounded up":           {numNodes: 11, reason: v1.DisruptionReasonEmpty, want: 2},
		"budgets: [] limits nothing":          {budgets: []v1.Budget{}, numNodes: 11, reason: v1.DisruptionReasonEmpty, want: disruption.Unlimited},
		"disrupting nodes count against it":   {budgets: []v1.Budget{budget("3")}, numNodes: 10, disrupting: 2, reason: v1.DisruptionReasonEmpty, want: 1},
		"never below zero":                    {budgets: []v1.Budget{budget("1")}, numNodes: 10, disrupting: 4, reason: v1.DisruptionReasonEmpty, want: 0},
		"most restrictive wins":               {budgets: []v1.Budget{budget("5"), budget("50%"), budget("2")}, numNodes: 10, reason: v1.DisruptionReasonDrifted, want: 2},
		"budget of other reasons ignored":     {budgets: []v1.Budget{budget("0", v1.DisruptionReasonDrifted), budget("4")}, numNodes: 10, reason: v1.DisruptionReasonEmpty, want: 4},
		"budget of this reason applies":       {budgets: []v1.Budget{budget("0", v1.DisruptionReasonDrifted), budget("4")}, numNodes: 10, reason: v1.DisruptionReasonDrifted, want: 0},
		"Expired is accepted, limits nothing": {budgets: []v1.Budget{budget("0", v1.DisruptionReasonExpired)}, numNodes: 10, reason: v1.DisruptionReasonUnderutilized, want: disruption.Unlimited},
		"inactive scheduled budget":           {budgets: []v1.Budget{scheduled("0", "0 13 * * *", time.Hour)}, numNodes: 10, reason: v1.DisruptionReasonEmpty, want: disruption.Unlimited},
		"active scheduled budget":             {budgets: []v1.Budget{scheduled("0", "0 12 * * *", time.Hour), budget("3")}, numNodes: 10, reason: v1.DisruptionReasonEmpty, want: 0},
		"invalid cron fails closed":           {budgets: []v1.Budget{scheduled("5", "0 25 * * *", time.Hour), budget("3")}, numNodes: 10, reason: v1.DisruptionReasonEmpty, want: 0, wantErr: true},
		"invalid cron of another reason":      {budgets: []v1.Budget{scheduled("5", "0 25 * * *", time.Hour, v1.DisruptionReasonDrifted), budget("3")}, numNodes: 10, reason: v1.DisruptionReasonEmpty, want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := makePool("default").budgets(tc.budgets...).obj()
			at := tc.at
			if at.IsZero() {
				at = now
			}
			got, err := disruption.AllowedDisruptions(np, tc.reason, at, tc.numNodes, tc.disrupting)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("allowed = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestBudgetsLimitCommands: Decide stays within the budgets, counting the
// nodes already being disrupted, and reports what each budget allows.
func TestBudgetsLimitCommands(t *testing.T) {
	empties := func(np *v1.NodePool, n int) []*machine.Machine {
		var out []*machine.Machine
		for i := range n {
			out = append(out, makeNode(fmt.Sprintf("n%d", i), np, catalog()[0], zoneA, v1.CapacityTypeOnDemand).obj())
		}
		return out
	}
	cases := map[string]struct {
		budgets        []v1.Budget
		nodes          func(np *v1.NodePool) []*machine.Machine
		disrupting     []string
		wantCandidates int
		wantAllowed    int
		wantBlocked    bool
	}{
		"10% of 3 nodes is 1": {
			budgets: []v1.Budget{budget("10%")}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 3) },
			wantCandidates: 1, wantAllowed: 1, wantBlocked: true,
		},
		"50% of 3 nodes is 2": {
			budgets: []v1.Budget{budget("50%")}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 3) },
			wantCandidates: 2, wantAllowed: 2, wantBlocked: true,
		},
		"a node being deleted counts against the budget": {
			budgets: []v1.Budget{budget("2")},
			nodes: func(np *v1.NodePool) []*machine.Machine {
				nodes := empties(np, 3)
				nodes[0].MarkedForDeletion = true
				return nodes
			},
			wantCandidates: 1, wantAllowed: 1, wantBlocked: true,
		},
		"a node of a queued command counts against the budget": {
			budgets: []v1.Budget{budget("2")}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 3) },
			disrupting: []string{"n0"}, wantCandidates: 1, wantAllowed: 1, wantBlocked: true,
		},
		"a NotReady node counts against the budget": {
			budgets: []v1.Budget{budget("2")},
			nodes: func(np *v1.NodePool) []*machine.Machine {
				nodes := empties(np, 3)
				nodes[2] = makeNode("n2", np, catalog()[0], zoneA, v1.CapacityTypeOnDemand).pods(pod("p", "web", "1")).notReady().obj()
				return nodes
			},
			wantCandidates: 1, wantAllowed: 1, wantBlocked: true,
		},
		"a zero budget blocks": {
			budgets: []v1.Budget{budget("0")}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 2) },
			wantCandidates: 0, wantAllowed: 0, wantBlocked: true,
		},
		"a scheduled zero budget blocks inside its window": {
			budgets: []v1.Budget{scheduled("0", "0 9 * * *", 4*time.Hour)}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 2) },
			wantCandidates: 0, wantAllowed: 0, wantBlocked: true,
		},
		"a scheduled zero budget allows outside its window": {
			budgets: []v1.Budget{scheduled("0", "0 20 * * *", 4*time.Hour)}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 2) },
			wantCandidates: 2, wantAllowed: disruption.Unlimited,
		},
		"an invalid cron fails closed": {
			budgets: []v1.Budget{scheduled("10", "61 * * * *", time.Hour)}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 2) },
			wantCandidates: 0, wantAllowed: 0, wantBlocked: true,
		},
		"an Underutilized budget does not limit emptiness": {
			budgets: []v1.Budget{budget("0", v1.DisruptionReasonUnderutilized)}, nodes: func(np *v1.NodePool) []*machine.Machine { return empties(np, 2) },
			wantCandidates: 2, wantAllowed: disruption.Unlimited,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := makePool("default").budgets(tc.budgets...).obj()
			in := input([]*v1.NodePool{np}, tc.nodes(np)...)
			in.Disrupting = map[string]bool{}
			for _, n := range tc.disrupting {
				in.Disrupting[n] = true
			}
			out := disruption.Decide(in, disruption.Options{})
			got := 0
			if out.Command != nil {
				got = len(out.Command.Candidates)
			}
			if got != tc.wantCandidates {
				t.Errorf("disrupting %d nodes, want %d (%+v)", got, tc.wantCandidates, summarize(out.Command))
			}
			status := budgetStatus(out, v1.DisruptionReasonEmpty)
			if diff := cmp.Diff([2]any{tc.wantAllowed, tc.wantBlocked}, [2]any{status.Allowed, status.Blocked}); diff != "" {
				t.Errorf("Empty budget (allowed, blocked) (-want +got):\n%s", diff)
			}
		})
	}
}

func budgetStatus(out disruption.Outcome, reason v1.DisruptionReason) disruption.BudgetStatus {
	for _, b := range out.Budgets {
		if b.Reason == reason {
			return b
		}
	}
	return disruption.BudgetStatus{}
}

// TestDriftBudget: drift replaces at most as many nodes as the Drifted
// budget allows, one command at a time.
func TestDriftBudget(t *testing.T) {
	np := makePool("default").budgets(budget("1", v1.DisruptionReasonDrifted)).obj()
	var nodes []*machine.Machine
	for i := range 3 {
		nodes = append(nodes, makeNode(fmt.Sprintf("n%d", i), np, catalog()[2], zoneA, v1.CapacityTypeOnDemand).
			pods(pod(fmt.Sprintf("p%d", i), "web", "1")).lastPodEvent(time.Second).drifted(time.Duration(i+1)*time.Minute).obj())
	}
	in := input([]*v1.NodePool{np}, nodes...)
	out := disruption.Decide(in, disruption.Options{})
	if diff := cmp.Diff(&summary{Method: disruption.MethodDrift, Reason: v1.DisruptionReasonDrifted, Decision: disruption.DecisionReplace,
		Candidates: []string{"n2"}, Replacements: []string{"small/[on-demand spot]"}}, summarize(out.Command)); diff != "" {
		t.Errorf("first command (-want +got):\n%s", diff)
	}
	in.Disrupting = map[string]bool{"n2": true}
	out = disruption.Decide(in, disruption.Options{})
	if out.Command != nil {
		t.Errorf("second command while the first runs: %+v", summarize(out.Command))
	}
	if status := budgetStatus(out, v1.DisruptionReasonDrifted); status.Allowed != 0 || !status.Blocked || status.Eligible != 2 {
		t.Errorf("Drifted budget = %+v, want 0 allowed, blocked, 2 eligible", status)
	}
}
