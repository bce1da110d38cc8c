package controllers

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// TestDryRunRunsOnlyReadOnlyControllers checks that shadow mode builds
// exactly the controllers ReadOnly calls "on", and that ReadOnly names
// every controller a live process builds, so that a controller added
// later must be classified before shadow mode can be trusted with it.
func TestDryRunRunsOnlyReadOnlyControllers(t *testing.T) {
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	deps := Dependencies{Clock: clk, Cluster: state.NewCluster(clk), Metrics: m}
	names := func(opts Options) map[string]bool {
		out := map[string]bool{}
		for _, c := range NewControllers(deps, opts) {
			out[c.Name()] = true
		}
		return out
	}
	live := names(Options{NodeRepair: true})
	for name := range live {
		if _, ok := ReadOnly()[name]; !ok {
			t.Errorf("controller %s is not classified in ReadOnly", name)
		}
	}
	for name := range ReadOnly() {
		if !live[name] {
			t.Errorf("ReadOnly names %s, which NewControllers does not build", name)
		}
	}
	shadow := names(Options{NodeRepair: true, DryRun: true})
	for name, why := range ReadOnly() {
		if on := strings.HasPrefix(why, "on:"); on != shadow[name] {
			t.Errorf("controller %s: built in dry-run %v, but ReadOnly says %q", name, shadow[name], why)
		}
	}
}
