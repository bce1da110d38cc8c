// Package env runs integration and end-to-end test packages against a real
// local control plane (internal/controlplane) with Dovetail's CRDs installed.
// A package's TestMain calls Run once; tests then share the Environment.
//
// Set DOVETAIL_KEEP_CONTROLPLANE=true to keep the control plane's work
// directory (component logs, etcd data) after the run for debugging.
package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/crdinstall"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// Environment is a running control plane with clients for it.
type Environment struct {
	ControlPlane *controlplane.ControlPlane
	// Client is a controller-runtime client that knows Dovetail's kinds and the built-in ones.
	Client client.Client
	// Clientset is a client-go clientset, for subresources such as eviction.
	Clientset kubernetes.Interface
	// Scheme holds every kind the Client knows.
	Scheme *runtime.Scheme
}

// Run starts a control plane of the given profile, installs the CRDs, runs
// the package's tests and stops everything. It returns the exit code for
// os.Exit. A missing binary or a start failure fails the run loudly.
func Run(m *testing.M, profile controlplane.Profile, out **Environment) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := Start(ctx, profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the test environment: %v\n", err)
		return 1
	}
	*out = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the test environment: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Start starts a control plane of the given profile with the CRDs installed.
func Start(ctx context.Context, profile controlplane.Profile) (*Environment, error) {
	keep := os.Getenv("DOVETAIL_KEEP_CONTROLPLANE") == "true"
	cp, err := controlplane.Start(ctx, controlplane.Options{Profile: profile, KeepWorkDir: keep})
	if err != nil {
		return nil, err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "control plane work directory (kept): %s\n", cp.WorkDir())
	}
	e, err := newEnvironment(ctx, cp)
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return e, nil
}

func newEnvironment(ctx context.Context, cp *controlplane.ControlPlane) (*Environment, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	if err := crdinstall.Install(ctx, cp.RESTConfig, all, time.Minute); err != nil {
		return nil, err
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("creating clientset: %w", err)
	}
	return &Environment{ControlPlane: cp, Client: c, Clientset: cs, Scheme: scheme}, nil
}

// Stop stops the control plane.
func (e *Environment) Stop() error { return e.ControlPlane.Stop() }

// Namespace creates a namespace unique to the test and deletes it at cleanup.
func (e *Environment) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.GenerateName = "test-"
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
	return ns.Name
}
