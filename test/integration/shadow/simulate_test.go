package shadow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cli"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

// TestSimulateAgainstLive reads a cluster through its kubeconfig: two
// m5.xlarge nodes of NodePool default and one m5.large node no NodePool
// owns (another autoscaler's), with pods on each. `dovetail simulate
// --against-live` reports the three nodes and their $/h beside the
// NodeClaims a fresh plan would launch for the same pods, as a table and
// as JSON, and refuses --snapshot with it.
func TestSimulateAgainstLive(t *testing.T) {
	testEnv.RemoveClusterScoped(t)
	ns := testEnv.Namespace(t)
	kwokNodeClass(t, "default")
	testEnv.CreateWithStatus(t, whatiftest.NodePool("default", "default", 0, "30s"))
	types, err := whatif.CatalogInstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	for _, name := range []string{"node-a", "node-b"} {
		node, claim := whatiftest.Machine(name, "default", byName["m5.xlarge"], "us-east-1a", v1.CapacityTypeOnDemand)
		testEnv.CreateWithStatus(t, claim)
		testEnv.CreateWithStatus(t, node)
		testEnv.CreateWithStatus(t, whatiftest.Pod(ns, "web-"+name, "web", name, "1", "1Gi"))
	}
	other, _ := whatiftest.Machine("asg-node", "", byName["m5.large"], "us-east-1b", v1.CapacityTypeOnDemand)
	delete(other.Labels, v1.NodePoolLabelKey)
	delete(other.Labels, v1.CapacityTypeLabelKey)
	testEnv.CreateWithStatus(t, other)
	testEnv.CreateWithStatus(t, whatiftest.Pod(ns, "api-0", "api", "asg-node", "500m", "512Mi"))

	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		root := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		root.SetArgs(append(append([]string{"simulate", "--against-live"}, args...), "--kubeconfig", testEnv.ControlPlane.KubeconfigPath))
		err := root.Execute()
		return out.String(), err
	}
	out, err := run()
	if err != nil {
		t.Fatalf("simulate --against-live: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Live cluster now: 3 node(s), $0.4800/h",
		"default   m5.xlarge",
		"(none)    m5.large",
		"Dovetail would run: ",
		"Difference: ",
		"for 3 pod(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out, err = run("-o", "json")
	if err != nil {
		t.Fatalf("simulate --against-live -o json: %v", err)
	}
	var got cli.LiveComparison
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if got.Live.Nodes != 3 || !near(got.Live.PricePerHour, 0.48) || got.Pods != 3 || got.Dovetail.Nodes == 0 ||
		len(got.Unschedulable) != 0 || got.NodesDelta != got.Dovetail.Nodes-3 {
		t.Errorf("comparison = %+v", got)
	}
	// Nothing was written: the cluster still has its three nodes.
	before := versions(t)
	if _, err := run("-o", "yaml"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, versions(t)); diff != "" {
		t.Errorf("simulate changed the cluster (-before +after):\n%s", diff)
	}
	if _, err := run("--snapshot", "cluster.yaml"); err == nil || !strings.Contains(err.Error(), "cannot be used with --snapshot") {
		t.Errorf("--against-live --snapshot: %v, want a clear refusal", err)
	}
}

// kwokNodeClass creates a Ready KWOKNodeClass, deleted after the test.
func kwokNodeClass(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := testEnv.Client.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), class) })
	meta.SetStatusCondition(&class.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := testEnv.Client.Status().Update(ctx, class); err != nil {
		t.Fatal(err)
	}
}
