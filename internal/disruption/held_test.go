package disruption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// heldSummary is what the tables compare of a Held.
type heldSummary struct {
	Node    string
	Reason  v1.DisruptionReason
	Budget  int
	OpensAt string // RFC 3339, or "" when no window opens
}

// TestHeldNodes: a candidate a budget turns away is reported with the
// binding budget and the time its window opens (now is Monday 12:00 UTC).
func TestHeldNodes(t *testing.T) {
	small := catalog()[0]
	businessHours := scheduled("0", "0 9 * * mon-fri", 8*time.Hour, v1.DisruptionReasonEmpty)
	cases := map[string]struct {
		budgets []v1.Budget
		drifted bool
		nodes   int // empty nodes a, b, ...
		want    []heldSummary
		wantCmd []string
		// wantMsg must appear in the first hold's message.
		wantMsg string
	}{
		"an empty node held during business hours goes at 17:00": {
			budgets: []v1.Budget{budget("100%"), businessHours},
			nodes:   1,
			want:    []heldSummary{{Node: "a", Reason: v1.DisruptionReasonEmpty, Budget: 1, OpensAt: "2025-01-06T17:00:00Z"}},
			wantMsg: `Disruption for reason Empty held by NodePool default's budget 1 (nodes "0", reasons [Empty], schedule "0 9 * * mon-fri" for 8h0m0s): ` +
				"allows 0 of 1 nodes now, 0 taken by disruptions in progress or this decision; its disruption window opens at 2025-01-06T17:00:00Z",
		},
		"overlapping windows: the hold lasts until the last one closes": {
			budgets: []v1.Budget{businessHours, scheduled("0", "0 16 * * *", 3*time.Hour)},
			nodes:   1,
			want:    []heldSummary{{Node: "a", Reason: v1.DisruptionReasonEmpty, Budget: 0, OpensAt: "2025-01-06T19:00:00Z"}},
		},
		"a scheduled limit of one: the others wait for its window to close": {
			budgets: []v1.Budget{budget("100%"), scheduled("1", "0 9 * * mon-fri", 8*time.Hour)},
			nodes:   4,
			wantCmd: []string{"a"},
			want: []heldSummary{
				{Node: "b", Reason: v1.DisruptionReasonEmpty, Budget: 1, OpensAt: "2025-01-06T17:00:00Z"},
				{Node: "c", Reason: v1.DisruptionReasonEmpty, Budget: 1, OpensAt: "2025-01-06T17:00:00Z"},
				{Node: "d", Reason: v1.DisruptionReasonEmpty, Budget: 1, OpensAt: "2025-01-06T17:00:00Z"},
			},
			wantMsg: "allows 1 of 4 nodes now, 1 taken by disruptions in progress or this decision; its disruption window opens at 2025-01-06T17:00:00Z",
		},
		"a budget without schedule holds until the disruptions finish": {
			budgets: []v1.Budget{budget("1")},
			nodes:   2,
			wantCmd: []string{"a"},
			want:    []heldSummary{{Node: "b", Reason: v1.DisruptionReasonEmpty, Budget: 0}},
			wantMsg: `budget 0 (nodes "1", all reasons, no schedule): allows 1 of 2 nodes now, 1 taken by disruptions in progress or this decision; ` +
				"it allows more once those disruptions finish",
		},
		"a zero budget without schedule never opens": {
			budgets: []v1.Budget{budget("0")},
			nodes:   1,
			want:    []heldSummary{{Node: "a", Reason: v1.DisruptionReasonEmpty, Budget: 0}},
			wantMsg: "no budget schedule opens a window within 31 days",
		},
		"the default budget binds when the pool has none": {
			budgets: nil,
			nodes:   2,
			wantCmd: []string{"a"},
			want:    []heldSummary{{Node: "b", Reason: v1.DisruptionReasonEmpty, Budget: -1}},
			wantMsg: `default budget (nodes "10%", all reasons, no schedule)`,
		},
		"a drifted node held by its Drifted budget": {
			budgets: []v1.Budget{budget("100%"), scheduled("0", "@daily", 24*time.Hour, v1.DisruptionReasonDrifted)},
			drifted: true,
			nodes:   1,
			// Emptiness takes the empty node first, unless its budget holds it too.
			wantCmd: []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := makePool("default").budgets(tc.budgets...)
			w.np.Spec.Disruption.Budgets = tc.budgets
			np := w.obj()
			var nodes []*machine.Machine
			for i := range tc.nodes {
				n := makeNode(string(rune('a'+i)), np, small, zoneA, v1.CapacityTypeOnDemand)
				if tc.drifted {
					n = n.drifted(time.Hour)
				}
				nodes = append(nodes, n.obj())
			}
			out := disruption.Decide(input([]*v1.NodePool{np}, nodes...), disruption.Options{})
			var got []heldSummary
			for _, h := range out.Held {
				s := heldSummary{Node: h.Node.Name, Reason: h.Reason, Budget: h.Budget}
				if !h.OpensAt.IsZero() {
					s.OpensAt = h.OpensAt.Format(time.RFC3339)
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("held mismatch (-want +got):\n%s", diff)
			}
			var cmd []string
			if out.Command != nil {
				for _, c := range out.Command.Candidates {
					cmd = append(cmd, c.Name())
				}
			}
			if diff := cmp.Diff(tc.wantCmd, cmd); diff != "" {
				t.Errorf("command candidates mismatch (-want +got):\n%s", diff)
			}
			if tc.wantMsg != "" && (len(out.Held) == 0 || !strings.Contains(out.Held[0].Message(), tc.wantMsg)) {
				msg := ""
				if len(out.Held) > 0 {
					msg = out.Held[0].Message()
				}
				t.Errorf("message %q\ndoes not contain %q", msg, tc.wantMsg)
			}
		})
	}
}

// TestHeldDriftedNode: a drifted node with pods, held by a Drifted budget,
// is reported once with that budget.
func TestHeldDriftedNode(t *testing.T) {
	np := makePool("default").budgets(budget("100%"), scheduled("0", "@daily", 20*time.Hour, v1.DisruptionReasonDrifted)).obj()
	n := makeNode("a", np, catalog()[1], zoneA, v1.CapacityTypeOnDemand).pods(pod("p", "web", "1")).lastPodEvent(time.Second).drifted(time.Hour).obj()
	out := disruption.Decide(input([]*v1.NodePool{np}, n), disruption.Options{})
	if out.Command != nil {
		t.Fatalf("command %s, want none", out.Command)
	}
	if len(out.Held) != 1 || out.Held[0].Reason != v1.DisruptionReasonDrifted || out.Held[0].Budget != 1 {
		t.Fatalf("held = %+v, want node a held for Drifted by budget 1", out.Held)
	}
	if want := "its disruption window opens at 2025-01-06T20:00:00Z"; !strings.Contains(out.Held[0].Message(), want) {
		t.Errorf("message %q does not contain %q", out.Held[0].Message(), want)
	}
}

// TestNextWindow covers schedule arithmetic directly.
func TestNextWindow(t *testing.T) {
	cases := map[string]struct {
		budgets []v1.Budget
		busy    int
		want    string
	}{
		"a weekday freeze ends on Saturday":    {budgets: []v1.Budget{scheduled("0", "0 0 * * mon-fri", 24*time.Hour)}, want: "2025-01-11T00:00:00Z"},
		"a window closing":                     {budgets: []v1.Budget{scheduled("0", "0 11 * * *", 2*time.Hour)}, want: "2025-01-06T13:00:00Z"},
		"the window must allow more than busy": {budgets: []v1.Budget{scheduled("0", "0 11 * * *", 2*time.Hour), scheduled("1", "0 12 * * *", 3*time.Hour)}, busy: 1, want: "2025-01-06T15:00:00Z"},
		"no schedule: never":                   {budgets: []v1.Budget{budget("1")}, busy: 1},
		"other reasons do not count":           {budgets: []v1.Budget{budget("0"), scheduled("0", "@hourly", time.Minute, v1.DisruptionReasonDrifted)}},
		"a monthly freeze":                     {budgets: []v1.Budget{scheduled("0", "@monthly", 240*time.Hour)}, want: "2025-01-11T00:00:00Z"},
		"a long yearly freeze":                 {budgets: []v1.Budget{scheduled("0", "@yearly", 1440*time.Hour)}, want: "2025-03-02T00:00:00Z"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := makePool("p").budgets(tc.budgets...).obj()
			got := disruption.NextWindow(np, v1.DisruptionReasonEmpty, now, 10, tc.busy)
			s := ""
			if !got.IsZero() {
				s = got.Format(time.RFC3339)
			}
			if s != tc.want {
				t.Errorf("NextWindow = %q, want %q", s, tc.want)
			}
		})
	}
}

// TestHeldConsolidationCandidate: consolidation candidates of a pool whose
// Underutilized budget allows nothing are held, each reported once (the
// multi-node search, which only caps its prefix, reports none).
func TestHeldConsolidationCandidate(t *testing.T) {
	np := makePool("default").budgets(budget("100%"), budget("0", v1.DisruptionReasonUnderutilized)).obj()
	large := catalog()[2]
	out := disruption.Decide(input([]*v1.NodePool{np},
		makeNode("a", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p1", "web", "1")).obj(),
		makeNode("b", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p2", "web", "1")).obj(),
	), disruption.Options{})
	if out.Command != nil {
		t.Fatalf("command %s, want none", out.Command)
	}
	var got []string
	for _, h := range out.Held {
		got = append(got, h.Node.Name+"/"+string(h.Reason))
	}
	if diff := cmp.Diff([]string{"a/Underutilized", "b/Underutilized"}, got); diff != "" {
		t.Errorf("held mismatch (-want +got):\n%s", diff)
	}
	if want := `budget 1 (nodes "0", reasons [Underutilized], no schedule): allows 0 of 2 nodes now`; !strings.Contains(out.Held[0].Message(), want) {
		t.Errorf("message %q does not contain %q", out.Held[0].Message(), want)
	}
}

// BenchmarkNextWindowEveryMinute is the worst case of NextWindow: a freeze
// whose schedule fires every minute and never opens, followed to the cap.
// A pass computes it once per pool, reason and node counts, not per held
// node.
func BenchmarkNextWindowEveryMinute(b *testing.B) {
	np := makePool("p").budgets(scheduled("0", "* * * * *", 10*time.Minute)).obj()
	for b.Loop() {
		if got := disruption.NextWindow(np, v1.DisruptionReasonEmpty, now, 10, 0); !got.IsZero() {
			b.Fatalf("window opens at %s, want never", got)
		}
	}
}
