package disrupter

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// scrapingRecorder counts the allowed-disruptions series each time an event
// is published, that is, in the middle of publishing a pass's metrics, where
// a scrape can land.
type scrapingRecorder struct {
	gauge  *prometheus.GaugeVec
	counts []int
}

func (r *scrapingRecorder) Publish(...events.Event) {
	r.counts = append(r.counts, testutil.CollectAndCount(r.gauge))
}

// TestAllowedDisruptionsHaveNoGaps checks that a scrape during a pass sees
// every series of the previous pass (a pass does not start from nothing),
// and that a NodePool's series go once its budgets are no longer reported.
func TestAllowedDisruptionsHaveNoGaps(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec := &scrapingRecorder{gauge: m.DisruptionAllowed}
	c := &Controller{recorder: rec, metrics: m}
	pool := func(name string) *v1.NodePool { return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	budgets := func(names ...string) disruption.Outcome {
		var out disruption.Outcome
		for _, name := range names {
			out.Budgets = append(out.Budgets, disruption.BudgetStatus{NodePool: pool(name), Reason: v1.DisruptionReasonEmpty, Allowed: 0, Nodes: 3, Blocked: true})
		}
		return out
	}
	c.publish(context.Background(), budgets("a", "b"))
	rec.counts = nil
	c.publish(context.Background(), budgets("a", "b"))
	for i, n := range rec.counts {
		if n != 2 {
			t.Errorf("scrape %d during the second pass saw %d allowed-disruptions series, want 2", i, n)
		}
	}
	c.publish(context.Background(), budgets("a"))
	if n := testutil.CollectAndCount(m.DisruptionAllowed); n != 1 {
		t.Errorf("after NodePool b went: %d series, want 1", n)
	}
	if got := testutil.ToFloat64(m.DisruptionAllowed.WithLabelValues("a", "empty")); got != 0 {
		t.Errorf("allowed disruptions of a = %v, want 0", got)
	}
}
