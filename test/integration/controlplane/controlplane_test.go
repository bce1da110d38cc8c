// Package controlplane_test starts and stops the real local control plane:
// clean restarts in one process, no process left behind, and clear errors
// for bad options.
package controlplane_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
)

// TestStartStopTwice starts and stops the apiserver profile twice in one
// process; each run serves requests, writes a usable kubeconfig, and leaves
// no process and no work directory behind.
func TestStartStopTwice(t *testing.T) {
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cp, err := controlplane.Start(ctx, controlplane.Options{Profile: controlplane.ProfileAPIServer})
		if err != nil {
			cancel()
			t.Fatalf("run %d: starting: %v", run, err)
		}
		config, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
		if err != nil {
			t.Fatalf("run %d: loading kubeconfig: %v", run, err)
		}
		clientset, err := kubernetes.NewForConfig(config)
		if err != nil {
			t.Fatalf("run %d: creating client: %v", run, err)
		}
		version, err := clientset.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("run %d: reading server version through the kubeconfig: %v", run, err)
		}
		if !strings.HasPrefix(version.GitVersion, "v1.36.") {
			t.Errorf("run %d: server version %s, want v1.36.x", run, version.GitVersion)
		}
		pids, workDir := cp.PIDs(), cp.WorkDir()
		if len(pids) != 2 {
			t.Errorf("run %d: %d processes started, want etcd and kube-apiserver: %v", run, len(pids), pids)
		}
		if err := cp.Stop(); err != nil {
			t.Fatalf("run %d: stopping: %v", run, err)
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("run %d: a second Stop failed: %v", run, err)
		}
		cancel()
		for name, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("run %d: %s (pid %d) still exists after Stop (kill 0: %v)", run, name, pid, err)
			}
		}
		if _, err := os.Stat(workDir); !os.IsNotExist(err) {
			t.Errorf("run %d: work directory %s still exists after Stop", run, workDir)
		}
	}
}

// TestBadOptions checks that bad input fails fast with a clear error and
// leaves no process behind.
func TestBadOptions(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	emptyDir := t.TempDir()

	cases := map[string]struct {
		opts    controlplane.Options
		wantErr string
		wantIs  error
	}{
		"missing bin directory": {
			opts:    controlplane.Options{BinDir: filepath.Join(emptyDir, "nope")},
			wantErr: "does not exist", wantIs: controlplane.ErrBinariesMissing,
		},
		"bin directory without binaries": {
			opts:    controlplane.Options{BinDir: emptyDir, Profile: controlplane.ProfileFull},
			wantErr: "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kwok-stages.yaml", wantIs: controlplane.ErrBinariesMissing,
		},
		"unknown profile":       {opts: controlplane.Options{Profile: "tiny"}, wantErr: `profile "tiny" is not one of`},
		"port out of range":     {opts: controlplane.Options{APIServerPort: 70000}, wantErr: "apiserver port 70000 is out of range"},
		"apiserver port in use": {opts: controlplane.Options{APIServerPort: busyPort}, wantErr: "apiserver port"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cp, err := controlplane.Start(context.Background(), tc.opts)
			if err == nil {
				_ = cp.Stop()
				t.Fatalf("Start succeeded; want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q is not %v", err, tc.wantIs)
			}
		})
	}
}

// TestRestartComponents restarts etcd and the kube-apiserver under a client,
// as the chaos suite does: data written before survives, the client works
// again afterwards, the old processes are gone, and an unknown component is
// refused by name.
func TestRestartComponents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Profile: controlplane.ProfileAPIServer})
	if err != nil {
		t.Fatalf("starting: %v", err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	}()
	clientset, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before-restart"}}
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{controlplane.BinaryEtcd, controlplane.BinaryKubeAPIServer} {
		before := cp.PIDs()[name]
		var extra []string
		if name == controlplane.BinaryKubeAPIServer {
			// A later flag wins: the restarted apiserver takes a tighter limit.
			extra = []string{"--max-requests-inflight=100"}
		}
		if err := cp.Restart(ctx, name, extra...); err != nil {
			t.Fatalf("restarting %s: %v", name, err)
		}
		if after := cp.PIDs()[name]; after == before {
			t.Errorf("%s has the same pid %d after Restart", name, after)
		}
		if err := syscall.Kill(before, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the old %s (pid %d) still exists after Restart", name, before)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := clientset.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Errorf("the namespace written before restarting %s is not readable after: %v", name, err)
		}
	}
	if err := cp.Restart(ctx, "kubelet"); err == nil || !strings.Contains(err.Error(), "kubelet") {
		t.Errorf("Restart of an unknown component: %v, want an error naming it", err)
	}
}
