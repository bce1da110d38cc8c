package bench

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// BenchmarkRestartWithBacklog10000 restarts the controller onto a backlog:
// the controller marks the default NodePool Ready and is stopped, a
// Deployment of 10,000 pods is created and the kube-scheduler marks every
// pod unschedulable, then the controller starts again. It reports how long
// the restarted controller takes to its first decision (the first NodeClaim
// created) and until every pod runs, and its peak RSS and CPU: a controller
// whose memory grew with the backlog would crash-loop under a memory limit
// on each restart. It compares that peak with the steady state's: the peak
// of a controller started onto the same cluster once every pod runs.
func BenchmarkRestartWithBacklog10000(b *testing.B) {
	const replicas = 10000
	for range b.N {
		ctx := context.Background()
		cluster, cs, startProcess := setUp(b, replicas)
		startProcess().Stop()

		if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "backlog"}}); err != nil {
			b.Fatal(err)
		}
		pods := watchPods(b, cs, "backlog")
		if err := cluster.Client.Create(ctx, inflate("backlog", replicas)); err != nil {
			b.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
			return pods.unschedulableCount() >= replicas, nil
		})
		if err != nil {
			b.Fatalf("waiting for the scheduler to mark %d pods unschedulable (%d): %v", replicas, pods.unschedulableCount(), err)
		}

		b.ResetTimer()
		start := clock.RealClock{}.Now()
		controller := startProcess()
		var firstDecision time.Duration
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			claims := &v1.NodeClaimList{}
			if err := cluster.Client.List(ctx, claims); err != nil || len(claims.Items) == 0 {
				return false, nil //nolint:nilerr // retried until the deadline
			}
			firstDecision = clock.RealClock{}.Since(start)
			return true, nil
		})
		if err != nil {
			b.Fatalf("waiting for the restarted controller's first NodeClaim: %v", err)
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Minute, true, func(context.Context) (bool, error) {
			_, running := pods.counts()
			return running >= replicas, nil
		})
		b.StopTimer()
		if err != nil {
			_, running := pods.counts()
			b.Fatalf("waiting for %d pods to run (%d running): %v", replicas, running, err)
		}
		_, last := pods.pendingTimes()
		used := controller.Stop()
		nodes, cost := fleet(b, cluster)

		// The steady state: a controller started onto the same cluster
		// once every pod runs, with nothing to decide, over the same
		// informers, model and disruption passes for steadyWindow.
		steady := startProcess()
		window, cancel := context.WithTimeout(ctx, steadyWindow)
		<-window.Done()
		cancel()
		steadyUsed := steady.Stop()

		b.ReportMetric(firstDecision.Seconds(), "s-to-first-nodeclaim")
		b.ReportMetric(last.Sub(start).Seconds(), "s-to-all-running")
		b.ReportMetric(used.CPUSeconds, "controller-cpu-s")
		b.ReportMetric(used.PeakRSSMB, "controller-peak-rss-MB")
		b.ReportMetric(steadyUsed.PeakRSSMB, "steady-peak-rss-MB")
		b.ReportMetric(used.PeakRSSMB/steadyUsed.PeakRSSMB, "restart/steady-rss")
		b.ReportMetric(float64(nodes), "nodes")
		b.Logf("restarted onto %d unschedulable pods: first NodeClaim %s after the process started, all Running after %s; controller %.1f CPU-s, peak RSS %.0f MB; %d nodes, $%.2f/h",
			replicas, seconds(firstDecision), seconds(last.Sub(start)), used.CPUSeconds, used.PeakRSSMB, nodes, cost)
		b.Logf("steady state (a controller started onto the %d running pods, for %s): peak RSS %.0f MB, %.1f CPU-s; restart peak / steady peak = %.2f",
			replicas, steadyWindow, steadyUsed.PeakRSSMB, steadyUsed.CPUSeconds, used.PeakRSSMB/steadyUsed.PeakRSSMB)
	}
}

// steadyWindow is how long the steady-state controller runs: its informers
// sync, its model is built, and disruption makes its passes over the fleet.
const steadyWindow = 90 * time.Second
