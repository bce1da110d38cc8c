package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestConsolidationMetricNames checks Karpenter's names and labels of the
// Balanced policy's metrics.
func TestConsolidationMetricNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.Consolidation.Score.WithLabelValues("approved", "default", "Balanced").Observe(0.75)
	m.Consolidation.Moves.WithLabelValues("rejected", "default", "Balanced").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	want := map[string]bool{"karpenter_consolidation_score": false, "karpenter_consolidation_moves_total": false}
	for _, f := range families {
		if _, ok := want[f.GetName()]; !ok {
			continue
		}
		want[f.GetName()] = true
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		if len(labels) != 3 || labels[0] != "decision" || labels[1] != "nodepool" || labels[2] != "policy" {
			t.Errorf("%s labels = %v, want [decision nodepool policy]", f.GetName(), labels)
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("metric %s not exported", name)
		}
	}
}
