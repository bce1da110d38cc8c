package view_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cli"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/view"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

// run executes the dovetail command line with args and returns its output.
func run(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func catalogType(t *testing.T, name string) *cloudprovider.InstanceType {
	t.Helper()
	types, err := whatif.CatalogInstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no instance type %s", name)
	return nil
}

func TestViewOnce(t *testing.T) {
	ctx := context.Background()
	ns := testEnv.Namespace(t)
	kubeconfig := testEnv.ControlPlane.KubeconfigPath
	if err := testEnv.Client.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	testEnv.CreateWithStatus(t, whatiftest.NodePool("default", "default", 0, "30s"))
	testEnv.CreateWithStatus(t, whatiftest.NodePool("spot", "default", 0, "30s"))

	large := catalogType(t, "m5.large")
	busy, busyClaim := whatiftest.Machine("view-busy", "default", large, "us-east-1a", v1.CapacityTypeOnDemand)
	drift, driftClaim := whatiftest.Machine("view-drift", "spot", large, "us-east-1b", v1.CapacityTypeSpot)
	meta.SetStatusCondition(&driftClaim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted"})
	_, flight := whatiftest.Machine("view-flight", "default", large, "us-east-1c", v1.CapacityTypeOnDemand)
	flight.Status.NodeName, flight.Status.ProviderID = "", ""
	flight.Status.Conditions = nil
	for _, obj := range []client.Object{busy, busyClaim, drift, driftClaim, flight} {
		testEnv.CreateWithStatus(t, obj)
	}
	testEnv.CreateWithStatus(t, whatiftest.Pod(ns, "web", "web", "view-busy", "1", "2Gi"))
	held := whatiftest.Pod(ns, "db", "db", "view-drift", "500m", "1Gi")
	held.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	testEnv.CreateWithStatus(t, held)

	out, err := run("view", "--once", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("view --once: %v\n%s", err, out)
	}
	t.Log("\n" + out)
	price := func(zone, ct string) string {
		for _, o := range large.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return fmt.Sprintf("%.4f", o.Price)
			}
		}
		t.Fatalf("m5.large has no %s offering in %s", ct, zone)
		return ""
	}
	lines := map[string][]string{
		"view-busy":   {"m5.large", "us-east-1a", "on-demand", price("us-east-1a", "on-demand"), "1     ", "Ready"},
		"view-drift":  {"m5.large", "us-east-1b", "spot", price("us-east-1b", "spot"), "drifted, blocked: do-not-disrupt pod " + ns + "/db"},
		"view-flight": {"(claim)", "m5.large", "us-east-1c", "Launching"},
	}
	for name, wants := range lines {
		line := lineOf(out, name)
		if line == "" {
			t.Errorf("no line for %s", name)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(line, want) {
				t.Errorf("line of %s lacks %q: %s", name, want, line)
			}
		}
	}
	for _, want := range []string{
		"Dovetail view: 2 nodes, 1 in flight, 2 pods,",
		"NodePool default: 1 nodes, 1 in flight, 1 pods,",
		"NodePool spot: 1 nodes, 0 in flight, 1 pods,",
		"prices: embedded EC2 catalog",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("--once into a buffer drew escape codes")
	}
}

func lineOf(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

func TestViewBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	if _, err := run("view", "--once", "--kubeconfig", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing kubeconfig: %v, want an error naming %s", err, missing)
	}
	garbled := filepath.Join(t.TempDir(), "garbled")
	if err := os.WriteFile(garbled, []byte("this: [is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run("view", "--once", "--kubeconfig", garbled); err == nil || !strings.Contains(err.Error(), "loading kubeconfig "+garbled) {
		t.Errorf("a garbled kubeconfig: %v", err)
	}
	unreachable := filepath.Join(t.TempDir(), "unreachable")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(unreachable, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run("view", "--once", "--timeout", "5s", "--kubeconfig", unreachable); err == nil || !strings.Contains(err.Error(), "reading NodePools from https://127.0.0.1:1") {
		t.Errorf("an unreachable server: %v", err)
	}
	if _, err := run("view", "--once", "--context", "nope", "--kubeconfig", testEnv.ControlPlane.KubeconfigPath); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown context: %v", err)
	}
	if _, err := run("view", "--bogus"); err == nil || !strings.Contains(err.Error(), "unknown flag: --bogus") {
		t.Errorf("an unknown flag: %v", err)
	}
}

// TestSourceFollowsChanges checks that the informers report a change
// without polling: a NodePool created after the first list arrives
// through Next.
func TestSourceFollowsChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := view.StartSource(ctx, testEnv.ControlPlane.RESTConfig, testEnv.Scheme, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	testEnv.CreateWithStatus(t, whatiftest.NodePool("late", "default", 0, "30s"))
	for {
		msg := src.Next(ctx)
		if msg.Err != nil {
			t.Fatalf("waiting for the NodePool late: %v", msg.Err)
		}
		for _, np := range msg.Objects.NodePools {
			if np.Name == "late" {
				return
			}
		}
	}
}
