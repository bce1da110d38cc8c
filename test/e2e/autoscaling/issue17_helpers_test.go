package autoscaling_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// startScraped is startDisruption with the controller's /metrics served on
// a free local port, which it returns, so that a test can read the
// counters Dovetail keeps under Karpenter's names.
func startScraped(t *testing.T, pools ...*v1.NodePool) int {
	t.Helper()
	port := freePort(t)
	startDisruptionWith(t, func(opts *operator.Options) { opts.MetricsPort = port }, pools...)
	return port
}

// expectMetric waits until the controller's /metrics has the series (name
// and labels, exactly as exposed) with the value.
func expectMetric(t *testing.T, port int, series string, want float64) {
	t.Helper()
	waitMetric(t, port, series, fmt.Sprint("= ", want), func(got float64) bool { return got == want })
}

// expectMetricAtLeast is expectMetric for a counter that may have counted
// more by the time it is read (a pass repeated on the same cluster).
func expectMetricAtLeast(t *testing.T, port int, series string, least float64) {
	t.Helper()
	waitMetric(t, port, series, fmt.Sprint(">= ", least), func(got float64) bool { return got >= least })
}

func waitMetric(t *testing.T, port int, series, want string, match func(float64) bool) {
	t.Helper()
	last := "(none)"
	// Eventually fails the test through runtime.Goexit, which runs this.
	defer func() { t.Logf("metric: %s", last) }()
	env.Eventually(t, time.Minute, fmt.Sprintf("%s %s on /metrics", series, want), func(ctx context.Context) (bool, error) {
		data, ok, err := scrape(ctx, port)
		if !ok || err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if value, ok := strings.CutPrefix(line, series+" "); ok {
				last = line
				var got float64
				if _, err := fmt.Sscan(value, &got); err == nil && match(got) {
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// eventOn waits until Dovetail has published an event with the reason on
// the named object (a Node, NodeClaim or NodePool: their events live in
// the default namespace) whose message contains every fragment, and
// returns the message.
func eventOn(t *testing.T, reason, object string, fragments ...string) string {
	t.Helper()
	var found string
	env.Eventually(t, 2*time.Minute, fmt.Sprintf("%s event on %s mentioning %q", reason, object, fragments), func(ctx context.Context) (bool, error) {
		msgs, err := eventMessages(ctx, reason, object)
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			if containsAll(m, fragments) {
				found = m
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// eventMessages lists the messages of Dovetail's events with the reason on
// the named cluster-scoped object.
func eventMessages(ctx context.Context, reason, object string) ([]string, error) {
	list := &corev1.EventList{}
	if err := testEnv.Client.List(ctx, list, client.InNamespace("default")); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Source.Component == "dovetail" && e.InvolvedObject.Name == object {
			out = append(out, e.Message)
		}
	}
	return out, nil
}

func containsAll(s string, fragments []string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// claimNames lists the names of the pool's NodeClaims that are not being
// deleted.
func claimNames(t *testing.T, pool string) []string {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(context.Background(), list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, nc := range list.Items {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc.Name)
		}
	}
	return out
}
