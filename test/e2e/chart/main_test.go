// Package chart_test installs Dovetail's Helm charts (charts/dovetail-crd,
// charts/dovetail) onto the full local control plane with the Helm pinned in
// hack/tools/helm, checks that the API server accepted every object, and
// then runs the dovetail binary as a process with the chart's environment
// and the chart's ServiceAccount's identity (a TokenRequest token), so
// that the chart's generated RBAC is what the API server enforces.
package chart_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/controllerprocess"
)

// The release the tests install: its name gives the chart's object names
// ("dovetail"), kube-system its namespace (the Lease, the webhook Secret).
const (
	releaseName = "dovetail"
	releaseNS   = "kube-system"
)

var (
	// cp is the control plane; kube and clientset act as its admin.
	cp        *controlplane.ControlPlane
	kube      client.Client
	clientset kubernetes.Interface
	// helmBin and dovetailBin are built once for the package.
	helmBin, dovetailBin string
	repoRoot             string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := controlplane.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "finding the repository: %v\n", err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "dovetail-chart-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a temporary directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	helmBin = filepath.Join(dir, "helm")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// Helm from its own module (its Kubernetes libraries are not ours),
	// and the controller binary the image ships.
	build := exec.CommandContext(ctx, "go", "build", "-o", helmBin, "helm.sh/helm/v3/cmd/helm")
	build.Dir = filepath.Join(root, "hack", "tools", "helm")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%v: %v\n%s", build.Args, err, out)
		return 1
	}
	if dovetailBin, err = controllerprocess.BuildBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp, err = controlplane.Start(ctx, controlplane.Options{Profile: controlplane.ProfileFull, KeepWorkDir: os.Getenv("DOVETAIL_KEEP_CONTROLPLANE") == "true"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	code := 1
	if err := setup(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "installing the charts: %v\n", err)
	} else {
		code = m.Run()
	}
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		code = 1
	}
	return code
}

// setup creates the admin clients and installs both charts: the CRDs
// chart, then the controller chart with the kwok provider and test timings.
func setup(ctx context.Context) error {
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	if kube, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	if clientset, err = kubernetes.NewForConfig(cp.RESTConfig); err != nil {
		return fmt.Errorf("creating the clientset: %w", err)
	}
	if _, err := helm(ctx, "install", releaseName+"-crd", chartDir("dovetail-crd"), "--namespace", releaseNS, "--wait"); err != nil {
		return err
	}
	if err := waitCRDsServed(ctx); err != nil {
		return err
	}
	if _, err := helm(ctx, "install", releaseName, chartDir("dovetail"), "--namespace", releaseNS, "--values", filepath.Join("testdata", "kwok-values.yaml")); err != nil {
		return err
	}
	return nil
}
