package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// controllerProcess is `dovetail controller` running as its own process.
type controllerProcess struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// buildDovetail builds the dovetail binary into dir.
func buildDovetail(b *testing.B, dir string) string {
	b.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "dovetail")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dovetail")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building dovetail: %v\n%s", err, out)
	}
	return bin
}

// startController runs the controller against the cluster with production
// defaults (batch windows 1 s / 10 s, JSON logs) but no leader election or ports.
func startController(b *testing.B, bin string, cluster *localcluster.Cluster, dir string) *controllerProcess {
	b.Helper()
	logPath := filepath.Join(dir, "dovetail.log")
	if keep := os.Getenv("DOVETAIL_BENCH_LOG"); keep != "" {
		logPath = keep // keep the controller's log for analysis
	}
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "controller", "--kubeconfig", cluster.ControlPlane.KubeconfigPath,
		"--leader-elect=false", "--metrics-port=0", "--health-probe-port=0")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the controller: %v", err)
	}
	p := &controllerProcess{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p
}

// usage is what the kernel measured of the controller process.
type usage struct {
	cpuSeconds float64
	peakRSSMB  float64
}

// stop terminates the controller and returns its resource usage.
func (p *controllerProcess) stop(b *testing.B) usage {
	b.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.log.Close()
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no resource usage for the controller process")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return usage{cpuSeconds: cpu, peakRSSMB: float64(ru.Maxrss) / 1024} // Maxrss is in KiB on Linux
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
