package disrupter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// eventList records published events.
type eventList struct{ events []events.Event }

func (l *eventList) Publish(evs ...events.Event) { l.events = append(l.events, evs...) }

// TestPublishScoresAndHolds: a scored move gives an event with its score on
// the node and NodeClaim (single node) or the NodePool (multi-node) and the
// karpenter_consolidation_* metrics; a held node gets an event naming the
// budget.
func TestPublishScoresAndHolds(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec := &eventList{}
	c := &Controller{recorder: rec, metrics: m}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	cand := &disruption.Candidate{Machine: &machine.Machine{Node: node, NodeClaim: claim}, NodePool: np}
	cmd := &disruption.Command{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Candidates: []*disruption.Candidate{cand}, PriceBefore: 0.4}
	single := disruption.MoveScore{NodePool: np, Method: disruption.MethodSingleNode, Command: cmd, Candidates: cmd.Candidates,
		Savings: 0.4, Disruption: 2, PoolCost: 1.6, PoolDisruption: 4, Score: 0.5, Threshold: 2, Approved: true}
	multi := single
	multi.Method, multi.Score, multi.Approved = disruption.MethodMultiNode, 0.2, false
	schedule := "0 9 * * mon-fri"
	np.Spec.Disruption.Budgets = []v1.Budget{{Schedule: &schedule, Duration: &metav1.Duration{Duration: 8 * time.Hour}}}
	held := disruption.Held{Node: node, NodeClaim: claim, NodePool: np, Reason: v1.DisruptionReasonEmpty, Budget: 0, Nodes: 4,
		OpensAt: time.Date(2025, 1, 6, 17, 0, 0, 0, time.UTC)}

	c.publish(context.Background(), disruption.Outcome{Scores: []disruption.MoveScore{single, multi}, Held: []disruption.Held{held}})

	want := []struct{ reason, kind, name, msg string }{
		{ReasonDisruptionBlocked, "NodeClaim", "n1", "its disruption window opens at 2025-01-06T17:00:00Z"},
		{ReasonDisruptionBlocked, "Node", "n1", `budget 0 (nodes "0", all reasons, schedule "0 9 * * mon-fri" for 8h0m0s)`},
		{ReasonConsolidationApproved, "NodeClaim", "n1", "Balanced consolidation score 0.50 >= threshold 0.50 (consolidationThreshold 2, savings 25.0%"},
		{ReasonConsolidationApproved, "Node", "n1", "disruption 50.0% of the pool's disruption cost)"},
		{ReasonConsolidationRejected, "NodePool", "pool", "score 0.20 < threshold 0.50"},
	}
	if len(rec.events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(rec.events), len(want), rec.events)
	}
	for i, w := range want {
		e := rec.events[i]
		kind := strings.TrimPrefix(fmt.Sprintf("%T", e.InvolvedObject), "*v1.")
		if e.Reason != w.reason || kind != w.kind || e.DedupeValues[0] != w.name || !strings.Contains(e.Message, w.msg) {
			t.Errorf("event %d = %s on %s %s: %q; want %s on %s %s containing %q", i, e.Reason, kind, e.DedupeValues[0], e.Message, w.reason, w.kind, w.name, w.msg)
		}
	}
	if got := testutil.ToFloat64(m.Consolidation.Moves.WithLabelValues("approved", "pool", "Balanced")); got != 1 {
		t.Errorf("moves_total{approved} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Consolidation.Moves.WithLabelValues("rejected", "pool", "Balanced")); got != 1 {
		t.Errorf("moves_total{rejected} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.Consolidation.Score); n != 2 {
		t.Errorf("%d score series, want 2", n)
	}
}
