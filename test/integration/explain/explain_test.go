package explain_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cli"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

func TestExplainPendingPod(t *testing.T) {
	reset(t)
	ns := testEnv.Namespace(t)
	createNodeClass(t, "ready", true, "")
	createNodeClass(t, "broken", false, "AMI not found")
	wide := whatiftest.NodePool("wide", "ready", 10, "30s")
	small := whatiftest.NodePool("small", "ready", 5, "30s")
	small.Spec.Template.Spec.Requirements = append(small.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
		Key: "karpenter.k8s.aws/instance-size", Operator: corev1.NodeSelectorOpIn, Values: []string{"large", "xlarge"},
	})
	limited := whatiftest.NodePool("limited", "ready", 4, "30s")
	limited.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("1")}
	tainted := whatiftest.NodePool("tainted", "ready", 3, "30s")
	tainted.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	broken := whatiftest.NodePool("broken", "broken", 2, "30s")
	// A static pool keeps its replica count and launches nothing for
	// pending pods, however heavy its weight.
	static := whatiftest.NodePool("static", "ready", 0, "30s")
	static.Spec.Replicas = new(int64(2))
	for _, np := range []*v1.NodePool{wide, small, limited, tainted, broken, static} {
		testEnv.CreateWithStatus(t, np)
	}
	big := whatiftest.Pod(ns, "big", "big", "", "100", "8Gi")
	testEnv.CreatePendingPod(t, big)
	testEnv.CreatePendingPod(t, whatiftest.Pod(ns, "tiny", "tiny", "", "1", "1Gi"))
	spot := whatiftest.Pod(ns, "spot", "spot", "", "1", "1Gi")
	spot.Spec.NodeSelector = map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}
	testEnv.CreatePendingPod(t, spot)
	now := time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)

	e := explain(t, "pod", ns, "big", now)
	if !strings.HasPrefix(e.Summary, "Dovetail would launch a NodeClaim of NodePool wide") {
		t.Errorf("summary = %q, want a launch from NodePool wide", e.Summary)
	}
	want := map[string]string{
		"wide":    "would launch ",
		"small":   "no instance type has room for",
		"limited": "no instance type has room for",
		"tainted": "untolerated taint dedicated=gpu:NoSchedule",
		"broken":  `NodePool is not ready (NodeClassNotReady): KWOKNodeClass "broken" is not ready: AMI not found`,
		"static":  "NodePool is static (spec.replicas 2): it keeps its node count and launches no node for pending pods",
	}
	if len(e.NodePools) != len(want) {
		t.Fatalf("got %d NodePool verdicts, want %d: %+v", len(e.NodePools), len(want), e.NodePools)
	}
	for _, v := range e.NodePools {
		if !strings.Contains(v.Reason, want[v.NodePool]) {
			t.Errorf("nodepool %s: reason %q, want it to contain %q", v.NodePool, v.Reason, want[v.NodePool])
		}
		if v.CanServe != (v.NodePool == "wide") {
			t.Errorf("nodepool %s: canServe = %t", v.NodePool, v.CanServe)
		}
	}
	if v := e.NodePools[1]; v.NodePool != "small" || !strings.Contains(v.Closest, "xlarge lacks cpu") {
		t.Errorf("verdicts are not in weight order, or small's closest type is %q, want an xlarge that lacks cpu", v.Closest)
	}

	// A pod small enough for every pool meets the limit of limited.
	for _, v := range explain(t, "pod", ns, "tiny", now).NodePools {
		if v.NodePool == "limited" && !strings.Contains(v.Reason+v.Limit, "limits reached") {
			t.Errorf("limited: reason %q, limit %q for a 1-cpu pod, want the limit", v.Reason, v.Limit)
		}
	}

	e = explain(t, "pod", ns, "spot", now)
	if !strings.HasPrefix(e.Summary, "Pod cannot be placed") || !strings.HasPrefix(e.Event, "Failed to schedule pod, ") {
		t.Errorf("summary %q and event %q, want an unplaceable pod and the provisioner's FailedScheduling message", e.Summary, e.Event)
	}
	for _, v := range e.NodePools {
		if v.NodePool == "wide" && !strings.Contains(v.Reason, "incompatible requirements: karpenter.sh/capacity-type In [on-demand] conflicts with") {
			t.Errorf("wide: reason %q, want the capacity-type conflict", v.Reason)
		}
	}
}

func TestExplainNodeNotConsolidated(t *testing.T) {
	reset(t)
	ns := testEnv.Namespace(t)
	ctx := context.Background()
	createNodeClass(t, "default", true, "")
	patient := whatiftest.NodePool("patient", "default", 0, "1h")
	frozen := whatiftest.NodePool("frozen", "default", 0, "30s")
	frozen.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("0")}}
	emptyOnly := whatiftest.NodePool("emptyonly", "default", 0, "30s")
	emptyOnly.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	balanced := whatiftest.NodePool("balanced", "default", 0, "30s")
	balanced.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	for _, np := range []*v1.NodePool{whatiftest.NodePool("default", "default", 0, "30s"), patient, frozen, emptyOnly, balanced} {
		testEnv.CreateWithStatus(t, np)
	}
	now := time.Now().UTC().Truncate(time.Second)
	m5, c6a := catalogType(t, "m5.xlarge"), catalogType(t, "c6a.2xlarge")
	machines := []struct {
		name, pool string
		cpu        string
		mutate     func(*corev1.Node, *v1.NodeClaim)
	}{
		{"node-dnd", "default", "1", func(n *corev1.Node, _ *v1.NodeClaim) {
			n.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		}},
		{"node-pdb", "default", "1", nil},
		{"node-young", "patient", "1", func(_ *corev1.Node, nc *v1.NodeClaim) {
			for i := range nc.Status.Conditions {
				nc.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Minute))
			}
		}},
		{"node-frozen", "frozen", "1", nil},
		{"node-full", "default", "7", nil},
		{"node-emptyonly", "emptyonly", "1", nil},
		{"node-balanced", "balanced", "7", nil},
	}
	for _, m := range machines {
		it := m5
		if m.name == "node-full" || m.name == "node-balanced" {
			it = c6a
		}
		n, nc := whatiftest.Machine(m.name, m.pool, it, "us-east-1a", v1.CapacityTypeOnDemand)
		if m.mutate != nil {
			m.mutate(n, nc)
		}
		testEnv.CreateWithStatus(t, n)
		testEnv.CreateWithStatus(t, nc)
		testEnv.CreateWithStatus(t, whatiftest.Pod(ns, strings.TrimPrefix(m.name, "node-")+"-0", strings.TrimPrefix(m.name, "node-"), m.name, m.cpu, "2Gi"))
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pdb", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pdb"}},
		},
	}
	testEnv.CreateWithStatus(t, pdb)

	cases := map[string]string{
		"node-dnd":       "Node has karpenter.sh/do-not-disrupt annotation",
		"node-pdb":       "PDB " + ns + "/pdb prevents pod evictions (pod " + ns + "/pdb-0)",
		"node-young":     "consolidateAfter (1h) has not passed since the node's last pod event: consolidatable at " + now.Add(50*time.Minute).Format(time.RFC3339) + ", in 50m0s",
		"node-frozen":    "No allowed disruptions for disruption reason Underutilized due to blocking budget",
		"node-full":      "Can't replace with a cheaper node",
		"node-emptyonly": "NodePool emptyonly consolidates only empty nodes (consolidationPolicy WhenEmpty) and the node runs 1 pod(s) that would move",
		// Balanced consolidates non-empty nodes too: the reason is the
		// placement, not the policy.
		"node-balanced": "Can't replace with a cheaper node",
	}
	for node, want := range cases {
		t.Run(node, func(t *testing.T) {
			e := explain(t, "node", "", node, now)
			if e.Disruption == nil || e.Disruption.Disrupted {
				t.Fatalf("got %+v, want a node that is not disrupted", e.Disruption)
			}
			if !strings.Contains(strings.Join(e.Disruption.Reasons, "\n"), want) {
				t.Errorf("reasons:\n%s\nwant one containing %q", strings.Join(e.Disruption.Reasons, "\n"), want)
			}
			if node != "node-emptyonly" && strings.Contains(strings.Join(e.Disruption.Reasons, "\n"), "consolidates only empty nodes") {
				t.Errorf("reasons:\n%s\nsay the pool consolidates only empty nodes", strings.Join(e.Disruption.Reasons, "\n"))
			}
			if e.InstanceType == nil || e.InstanceType.InstanceType == "" || e.InstanceType.Price == 0 {
				t.Errorf("instance type choice %+v, want the node's type and price", e.InstanceType)
			}
		})
	}
	e := explain(t, "node", "", "node-full", now)
	if best := e.Disruption.Reasons[len(e.Disruption.Reasons)-1]; !strings.HasPrefix(best, "best placement found: ") {
		t.Errorf("last reason %q, want the best placement found with its $/h delta", best)
	}
	// The NodeClaim of the same machine explains the same way.
	e = explain(t, "nodeclaim", "", "node-dnd", now)
	if !strings.Contains(e.Summary, "do-not-disrupt") {
		t.Errorf("nodeclaim summary %q", e.Summary)
	}
	if err := testEnv.Client.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
}

func TestExplainNodePoolBudgets(t *testing.T) {
	reset(t)
	createNodeClass(t, "default", true, "")
	np := whatiftest.NodePool("office-hours", "default", 0, "30s")
	np.Spec.Disruption.Budgets = []v1.Budget{
		{Nodes: intstr.FromString("0"), Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized},
			Schedule: new("0 9 * * 1-5"), Duration: &metav1.Duration{Duration: 8 * time.Hour}},
		{Nodes: intstr.FromString("1")},
	}
	testEnv.CreateWithStatus(t, np)
	monday := time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		now        time.Time
		wantChange string
		wantActive bool
		wantEvent  string
	}{
		"inside the window": {now: monday, wantActive: true, wantChange: "active until 2025-01-06T17:00:00Z (in 5h0m0s)",
			wantEvent: "No allowed disruptions for disruption reason Underutilized due to blocking budget"},
		"after the window": {now: monday.Add(8 * time.Hour), wantChange: "inactive until 2025-01-07T09:00:00Z (in 13h0m0s), then active for 8h0m0s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := explain(t, "nodepool", "", "office-hours", tc.now)
			if len(e.Budgets) != 2 {
				t.Fatalf("got %d budgets, want 2", len(e.Budgets))
			}
			b := e.Budgets[0]
			if b.Active != tc.wantActive || b.Change != tc.wantChange || b.Reasons != "Underutilized" {
				t.Errorf("scheduled budget = %+v, want active %t, change %q", b, tc.wantActive, tc.wantChange)
			}
			if e.Budgets[1].Change != "always active" {
				t.Errorf("unscheduled budget change = %q", e.Budgets[1].Change)
			}
			if e.Event != tc.wantEvent {
				t.Errorf("event = %q, want %q", e.Event, tc.wantEvent)
			}
		})
	}
}

func TestExplainAndSimulateCommands(t *testing.T) {
	reset(t)
	kubeconfig := testEnv.ControlPlane.KubeconfigPath
	run := func(cmdArgs ...string) (string, error) {
		var out, errOut bytes.Buffer
		root := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		root.SetArgs(append(cmdArgs, "--kubeconfig", kubeconfig))
		err := root.Execute()
		return out.String(), err
	}
	if _, err := run("explain", "pod", "nope", "-n", "default"); err == nil || !strings.Contains(err.Error(), "pod default/nope not found") {
		t.Errorf("explain of a missing pod: %v, want it to say the pod is not found", err)
	}
	if _, err := run("explain", "nodepool", "nope"); err == nil || !strings.Contains(err.Error(), "nodepool nope not found") {
		t.Errorf("explain of a missing nodepool: %v", err)
	}
	if _, err := run("simulate"); !errors.Is(err, whatif.ErrNoNodePool) {
		t.Errorf("simulate without NodePool: %v, want ErrNoNodePool", err)
	}
	createNodeClass(t, "default", true, "")
	testEnv.CreateWithStatus(t, whatiftest.NodePool("default", "default", 0, "30s"))
	out, err := run("explain", "nodepool", "default")
	if err != nil || !strings.Contains(out, "nodepool default: NodePool is ready") || !strings.Contains(out, "always active") {
		t.Errorf("explain nodepool: %v\n%s", err, out)
	}
	out, err = run("simulate", "-o", "json")
	if err != nil || !strings.Contains(out, `"nodePools"`) {
		t.Errorf("simulate -o json: %v\n%s", err, out)
	}
	snap, err := run("snapshot")
	if err != nil || !strings.Contains(snap, "kind: NodePool") || !strings.Contains(snap, "kind: KWOKNodeClass") {
		t.Errorf("snapshot: %v\n%s", err, snap)
	}
}

// TestSnapshotAndSimulateWithNodeOverlay: a NodeOverlay of the cluster
// reaches simulate through the API server and through a snapshot, and is
// skipped once its status says ValidationSucceeded=False.
func TestSnapshotAndSimulateWithNodeOverlay(t *testing.T) {
	reset(t)
	ctx := context.Background()
	createNodeClass(t, "default", true, "")
	testEnv.CreateWithStatus(t, whatiftest.NodePool("default", "default", 0, "30s"))
	discount := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m5-discount"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}},
			PriceAdjustment: new("-50%"),
			Weight:          new(int32(10)),
		},
	}
	if err := testEnv.Client.Create(ctx, discount); err != nil {
		t.Fatal(err)
	}
	ns := testEnv.Namespace(t)
	testEnv.CreatePendingPod(t, whatiftest.Pod(ns, "batch-0", "batch", "", "7", "20Gi"))
	// Earlier tests' pods stay (no namespace controller runs): simulate
	// this test's pods only.
	simulate := func(objs *whatif.Objects) *whatif.Result {
		t.Helper()
		objs.Pods = slices.DeleteFunc(objs.Pods, func(p *corev1.Pod) bool { return p.Namespace != ns })
		res, err := whatif.Simulate(objs, whatif.Options{Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	live, err := whatif.FromCluster(ctx, testEnv.Client)
	if err != nil {
		t.Fatal(err)
	}
	res := simulate(live)
	if len(res.Overlays) != 1 || res.Overlays[0].Name != "m5-discount" || len(res.Overlays[0].NodePools) != 1 {
		t.Errorf("overlays from the API server = %+v, want m5-discount applied in NodePool default", res.Overlays)
	}
	if len(res.Launches) != 1 || res.Launches[0].InstanceType != "m5.2xlarge" || !res.Launches[0].PriceOverlaid {
		t.Errorf("launches = %+v, want one m5.2xlarge at the overlaid price", res.Launches)
	}

	// The snapshot command writes it, and Load reads it back.
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs([]string{"snapshot", "--kubeconfig", testEnv.ControlPlane.KubeconfigPath})
	if err := root.Execute(); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "kind: NodeOverlay") || !strings.Contains(out.String(), "priceAdjustment: -50%") {
		t.Errorf("the snapshot lacks the NodeOverlay:\n%s", out.String())
	}
	snap := &whatif.Objects{}
	if err := whatif.Load("snapshot.yaml", out.Bytes(), snap); err != nil {
		t.Fatal(err)
	}
	if got := simulate(snap); len(got.Launches) != 1 || got.Launches[0].InstanceType != "m5.2xlarge" || !got.Launches[0].PriceOverlaid {
		t.Errorf("launches on the snapshot = %+v, want the same m5.2xlarge", got.Launches)
	}

	// Refused by the controller: skipped, as the decorator skips it.
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(discount), discount); err != nil {
		t.Fatal(err)
	}
	discount.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionTypeValidationSucceeded, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonConflict, Message: "conflicts", ObservedGeneration: discount.Generation, LastTransitionTime: metav1.NewTime(time.Now())}}
	if err := testEnv.Client.Status().Update(ctx, discount); err != nil {
		t.Fatal(err)
	}
	if live, err = whatif.FromCluster(ctx, testEnv.Client); err != nil {
		t.Fatal(err)
	}
	res = simulate(live)
	if len(res.Launches) != 1 || res.Launches[0].PriceOverlaid || len(res.Overlays) != 1 || res.Overlays[0].NotApplied == "" {
		t.Errorf("with the overlay refused: launches %+v, overlays %+v; want the catalog price and the overlay not applied", res.Launches, res.Overlays)
	}
}
