package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/controllerprocess"
)

// startController runs the controller against the cluster with production
// defaults (batch windows 1 s / 10 s, JSON logs) but no leader election or
// ports. DOVETAIL_BENCH_LOG keeps its log at that path for analysis,
// DOVETAIL_BENCH_PPROF_PORT serves /metrics and Go's profiles
// (/debug/pprof/) on that port, and DOVETAIL_BENCH_GOMEMLIMIT is the
// controller's GOMEMLIMIT (as the chart sets it from the memory limit):
// GOMEMLIMIT itself would reach every control-plane binary too.
func startController(b *testing.B, bin string, cluster *localcluster.Cluster, dir string) *controllerprocess.Process {
	b.Helper()
	logPath := filepath.Join(dir, "dovetail.log")
	if keep := os.Getenv("DOVETAIL_BENCH_LOG"); keep != "" {
		logPath = keep
	}
	metrics := []string{"--metrics-port=0"}
	if port := os.Getenv("DOVETAIL_BENCH_PPROF_PORT"); port != "" {
		metrics = []string{"--metrics-port=" + port, "--enable-profiling"}
	}
	var environ []string // the benchmark's own
	if limit := os.Getenv("DOVETAIL_BENCH_GOMEMLIMIT"); limit != "" {
		environ = append(os.Environ(), "GOMEMLIMIT="+limit)
	}
	args := append([]string{"controller", "--kubeconfig", cluster.ControlPlane.KubeconfigPath,
		"--leader-elect=false", "--health-probe-port=0"}, metrics...)
	return controllerprocess.StartEnv(b, bin, environ, logPath, args...)
}

// startCluster starts the local control plane with the default NodePool.
func startCluster(b *testing.B) *localcluster.Cluster {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err := localcluster.Start(ctx, controlplane.Options{}, true)
	if err != nil {
		b.Fatalf("starting the local cluster: %v", err)
	}
	b.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			b.Errorf("stopping the local cluster: %v", err)
		}
	})
	return cluster
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
