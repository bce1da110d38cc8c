// Package demo_test runs `dovetail demo` end to end, as a new user would,
// and checks what it reports.
package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/demo"
)

func TestDemo(t *testing.T) {
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	summary, err := demo.Run(ctx, demo.Options{BinDir: binDir, Out: &out})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	if summary.Pods != 22 || summary.Nodes == 0 || summary.CostPerHour <= 0 {
		t.Errorf("summary %+v: want 22 pods on some nodes at a positive price", summary)
	}
	if summary.MinAPIAvailable < 5 {
		t.Errorf("api availability fell to %d during the drain or consolidation; the PDB requires 5", summary.MinAPIAvailable)
	}
	if summary.ConsolidatedCost >= summary.CostPerHour || summary.ConsolidatedNodes == 0 || summary.ConsolidatedNodes > summary.Nodes {
		t.Errorf("after the load dropped: %d nodes at $%.4f/h, before %d at $%.4f/h; want fewer or cheaper nodes",
			summary.ConsolidatedNodes, summary.ConsolidatedCost, summary.Nodes, summary.CostPerHour)
	}
	for _, want := range []string{"All 22 pods Running", "TYPE", "ZONE", "CAPACITY", "$/H", "Node drained and removed", "Consolidated in", "Summary"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
