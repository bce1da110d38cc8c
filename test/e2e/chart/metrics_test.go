package chart_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// metricName matches the metrics a dashboard query names: Dovetail's
// (Karpenter's names) and controller-runtime's.
var metricName = regexp.MustCompile(`\b(karpenter_[a-z_]+|controller_runtime_[a-z_]+|workqueue_[a-z_]+)\b`)

// dashboardMetrics returns every metric the chart's dashboards query, in
// panels and in template variables, with the dashboards naming each.
func dashboardMetrics(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir("dovetail"), "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in the chart (%v)", err)
	}
	out := map[string][]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, q := range queries(doc) {
			for _, m := range metricName.FindAllString(q, -1) {
				if !slices.Contains(out[m], filepath.Base(f)) {
					out[m] = append(out[m], filepath.Base(f))
				}
			}
		}
	}
	return out
}

// queries collects the "expr" and "query" strings anywhere in a dashboard.
func queries(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := child.(string); ok && (k == "expr" || k == "query" || k == "definition") {
				out = append(out, s)
				continue
			}
			out = append(out, queries(child)...)
		}
	case []any:
		for _, child := range v {
			out = append(out, queries(child)...)
		}
	}
	return out
}

// checkDashboardMetrics scrapes the controller and checks that every metric
// a dashboard queries has at least one sample (a histogram's _bucket,
// _sum and _count count as its samples).
func checkDashboardMetrics(t *testing.T, c *controller) {
	want := dashboardMetrics(t)
	var missing []string
	env.Eventually(t, time.Minute, "every dashboard metric to have samples", func(ctx context.Context) (bool, error) {
		text, err := c.scrape(ctx)
		if err != nil {
			return false, err
		}
		missing = missing[:0]
		for m := range want {
			if !hasSamples(text, m) {
				missing = append(missing, m)
			}
		}
		return len(missing) == 0, nil
	})
	names := make([]string, 0, len(want))
	for m := range want {
		names = append(names, m)
	}
	slices.Sort(names)
	t.Logf("%d dashboard metrics served: %s", len(names), strings.Join(names, ", "))
}

// hasSamples reports whether the exposition text has a sample of metric.
func hasSamples(text, metric string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if name == metric || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count") == metric {
			return true
		}
	}
	return false
}

// TestDashboardsAreValid: each dashboard file is JSON with a unique uid and
// at least one panel whose queries name a metric.
func TestDashboardsAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir("dovetail"), "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in the chart (%v)", err)
	}
	uids := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string           `json:"uid"`
			Title  string           `json:"title"`
			Panels []map[string]any `json:"panels"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: want a uid, a title and panels", f)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", f, other, d.UID)
		}
		uids[d.UID] = f
		for _, p := range d.Panels {
			if len(metricName.FindAllString(strings.Join(queries(p), " "), -1)) == 0 {
				t.Errorf("%s: panel %v queries no metric", f, p["title"])
			}
		}
	}
}
