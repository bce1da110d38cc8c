// Package controllerprocess runs `dovetail controller` as its own process
// for tests that must treat it as one: kill it with SIGKILL and restart it
// (the chaos suite), or measure its CPU time and peak memory (the end-to-end
// benchmark).
package controllerprocess

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
)

// Build compiles the dovetail binary of this checkout into dir and returns
// its path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dovetail")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dovetail")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building dovetail: %v\n%s", err, out)
	}
	return bin
}

// Process is a running controller.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// Start runs `bin controller --kubeconfig kubeconfig args...`, appending its
// output to logPath. The kernel kills it if the test process dies.
func Start(t testing.TB, bin, kubeconfig, logPath string, args ...string) *Process {
	t.Helper()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"controller", "--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		t.Fatalf("starting the controller: %v", err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p
}

// Kill sends SIGKILL, as the OOM killer or a lost node would, and waits
// for the process to be gone.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing the controller: %v", err)
	}
	<-p.done
}

// Usage is what the kernel measured of the process.
type Usage struct {
	CPUSeconds float64
	PeakRSSMB  float64
}

// Stop sends SIGTERM, waits up to 30 s (then SIGKILLs), and returns the
// process's CPU time and peak memory. Calling it again returns the same.
func (p *Process) Stop() Usage {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return Usage{}
	}
	return Usage{
		CPUSeconds: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		PeakRSSMB:  float64(ru.Maxrss) / 1024, // Maxrss is in KiB on Linux
	}
}
