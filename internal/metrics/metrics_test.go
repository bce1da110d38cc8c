package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestNewRegistersKarpenterNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.NodeClaimsCreated.WithLabelValues("provisioning", "default").Inc()
	m.ClusterStateSynced.Set(1)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	names := map[string]bool{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "karpenter_") && !strings.HasPrefix(f.GetName(), "dovetail_shadow_") {
			t.Errorf("metric %s lacks the karpenter_ prefix (or dovetail_shadow_, for shadow mode's)", f.GetName())
		}
		names[f.GetName()] = true
	}
	for _, want := range []string{"karpenter_nodeclaims_created_total", "karpenter_cluster_state_synced"} {
		if !names[want] {
			t.Errorf("metric %s not exported; got %v", want, names)
		}
	}
	if _, err := New(reg); err == nil {
		t.Error("registering the same metrics twice succeeded")
	}
}

func TestGaugeSeriesKeepsOnlyTheLastSet(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test"}, []string{"a"})
	g := NewGaugeSeries(vec)
	var first Series
	first.Add(1, "x")
	first.Add(2, "x")
	first.Add(5, "y")
	g.Set(first)
	var second Series
	second.Add(3, "y")
	g.Set(second)
	got := map[string]float64{}
	ch := make(chan prometheus.Metric, 10)
	vec.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		got[d.GetLabel()[0].GetValue()] = d.GetGauge().GetValue()
	}
	if len(got) != 1 || got["y"] != 3 {
		t.Errorf("series after two sets: got %v, want only y=3", got)
	}
	g.Set(Series{})
	if n := testutil.CollectAndCount(vec); n != 0 {
		t.Errorf("series after an empty set: %d, want 0", n)
	}
}
