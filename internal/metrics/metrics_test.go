package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
		if !strings.HasPrefix(f.GetName(), "karpenter_") {
			t.Errorf("metric %s lacks the karpenter_ prefix", f.GetName())
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
