package autoscaling_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestMetricsUseKarpenterNames scrapes /metrics after real provisioning and
// checks the names dashboards built for Karpenter rely on.
func TestMetricsUseKarpenterNames(t *testing.T) {
	ctx := context.Background()
	if err := testEnv.Client.Create(ctx, localcluster.DefaultNodeClass()); err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.Create(ctx, localcluster.DefaultNodePool()); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	opts := localcluster.OperatorOptions()
	opts.BatchIdleDuration, opts.BatchMaxDuration = 500*time.Millisecond, 3*time.Second
	opts.LogWriter = testlog.Writer(t)
	opts.DisableWebhook = true
	opts.MetricsPort = port
	cluster := &localcluster.Cluster{ControlPlane: testEnv.ControlPlane, Client: testEnv.Client}
	controller, err := cluster.StartController(ctx, opts, compose.KwokOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { teardown(t, controller) })

	ns := testEnv.Namespace(t)
	create(t, workloads.Deployment(ns, "scraped", 4, "1", "1Gi"))
	waitRunning(t, ns, "scraped", 4, 2*time.Minute)

	want := []string{
		"karpenter_nodeclaims_created_total", "karpenter_nodeclaims_launched_total", "karpenter_nodeclaims_registered_total",
		"karpenter_nodeclaims_initialized_total", "karpenter_nodes_created_total", "karpenter_pods_state",
		"karpenter_pods_startup_duration_seconds", "karpenter_scheduler_scheduling_duration_seconds",
		"karpenter_cloudprovider_duration_seconds", "karpenter_nodepools_usage", "karpenter_cluster_state_synced",
		"controller_runtime_reconcile_total",
	}
	var body string
	env.Eventually(t, time.Minute, "every expected metric on /metrics", func(ctx context.Context) (bool, error) {
		data, ok, err := scrape(ctx, port)
		if !ok || err != nil {
			return false, err
		}
		body = string(data)
		for _, name := range want {
			if !strings.Contains(body, "\n"+name) {
				return false, nil
			}
		}
		return true, nil
	})
	if !strings.Contains(body, `karpenter_nodeclaims_created_total{nodepool="default",reason="provisioning"}`) {
		t.Errorf("nodeclaims_created_total lacks the provisioning series:\n%s", grepLines(body, "karpenter_nodeclaims_created_total"))
	}
}

// scrape reads the controller's /metrics on port; ok is false while the
// server does not answer yet.
func scrape(ctx context.Context, port int) (data []byte, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return nil, false, fmt.Errorf("building the metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, nil
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, false, fmt.Errorf("reading /metrics: %w", err)
	}
	return data, true, nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func grepLines(body, prefix string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
