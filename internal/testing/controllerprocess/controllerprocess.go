// Package controllerprocess runs `dovetail controller` as its own process
// for tests that must treat it as one: kill it with SIGKILL and restart it
// (the chaos suite), or measure its CPU time and peak memory (the end-to-end
// benchmark).
package controllerprocess

import (
	"fmt"
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
	bin, err := BuildBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildBinary is Build for a TestMain, which has no test to fail.
func BuildBinary(dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dovetail")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dovetail")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building dovetail: %w\n%s", err, out)
	}
	return bin, nil
}

// Process is a running controller.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	// killed is set by Stop, under once, if it had to SIGKILL.
	killed bool
}

// Start runs `bin controller --kubeconfig kubeconfig args...`, appending its
// output to logPath. The kernel kills it if the test process dies.
func Start(t testing.TB, bin, kubeconfig, logPath string, args ...string) *Process {
	t.Helper()
	return StartEnv(t, bin, nil, logPath, append([]string{"controller", "--kubeconfig", kubeconfig}, args...)...)
}

// StartEnv is Start for a controller configured by its environment: it runs
// `bin args...` with exactly environ (nil: the test's own environment).
func StartEnv(t testing.TB, bin string, environ []string, logPath string, args ...string) *Process {
	t.Helper()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, log, log
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

// Usage is what the kernel measured of the process, and how Stop ended it.
type Usage struct {
	CPUSeconds float64
	PeakRSSMB  float64
	// Killed is set when the process had not exited StopGrace after
	// SIGTERM and Stop SIGKILLed it.
	Killed bool
}

// StopGrace is how long Stop waits after SIGTERM: beyond the manager's own
// 30 s graceful shutdown, so that only a process that hangs past it is
// killed.
const StopGrace = 40 * time.Second

// Stop sends SIGTERM, waits up to StopGrace (then SIGKILLs), and returns
// the process's CPU time and peak memory. Calling it again returns the
// same; after the process has exited it only returns its usage.
func (p *Process) Stop() Usage {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(StopGrace):
			_ = p.cmd.Process.Kill()
			<-p.done
			p.killed = true
		}
	})
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return Usage{Killed: p.killed}
	}
	return Usage{
		CPUSeconds: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		PeakRSSMB:  float64(ru.Maxrss) / 1024, // Maxrss is in KiB on Linux
		Killed:     p.killed,
	}
}
