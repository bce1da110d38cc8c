package whatif_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// refused marks an overlay of objs ValidationSucceeded=False for its
// generation, as the nodeoverlay controller does.
func refused(t *testing.T, objs *whatif.Objects, name, reason, message string) {
	t.Helper()
	for _, no := range objs.NodeOverlays {
		if no.Name == name {
			meta.SetStatusCondition(&no.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionTypeValidationSucceeded,
				Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: no.Generation, LastTransitionTime: metav1.NewTime(now)})
			return
		}
	}
	t.Fatalf("no overlay %s", name)
}

func TestSimulateWithOverlays(t *testing.T) {
	base := filepath.Join("testdata", "base.yaml")
	discount := filepath.Join("testdata", "discount-overlay.yaml")
	fpgaPool := filepath.Join("testdata", "fpga-nodepool.yaml")
	fpga := filepath.Join("testdata", "fpga-overlay.yaml")
	cases := map[string]struct {
		manifests []string
		// change edits the manifests before they are applied.
		change func(t *testing.T, m *whatif.Objects)
		// wantLaunches are nodepool/type/capacity type: pods, with $/h
		// and a * when an overlay set the price.
		wantLaunches      []string
		wantUnschedulable []string
		wantOverlays      []whatif.OverlayUse
		// wantBefore and wantAfter are the cost lines.
		wantBefore, wantAfter float64
		// wantTable are lines the printed plan holds.
		wantTable []string
	}{
		"without overlays the cheapest type is c6a.2xlarge at its catalog price": {
			wantLaunches: []string{"default/c6a.2xlarge/on-demand $0.3060: jobs/batch-2,jobs/batch-3"},
			wantBefore:   0.576, wantAfter: 0.882,
		},
		"a discount on m5 flips the launch to m5.2xlarge and halves the price of the m5 nodes": {
			manifests:    []string{discount},
			wantLaunches: []string{"default/m5.2xlarge/on-demand $0.1920*: jobs/batch-2,jobs/batch-3"},
			wantOverlays: []whatif.OverlayUse{{Name: "m5-discount", NodePools: []string{"default"}}},
			wantBefore:   0.288, wantAfter: 0.480,
			wantTable: []string{
				"NodeOverlays applied: m5-discount (NodePool default); a price one set is marked *.",
				"default   m5.2xlarge     us-east-1a  on-demand      0.1920*",
				"Cost: $0.2880/h now, $0.4800/h after launches",
			},
		},
		"an overlay the controller marked ValidationSucceeded=False is skipped": {
			manifests: []string{discount},
			change: func(t *testing.T, m *whatif.Objects) {
				refused(t, m, "m5-discount", v1alpha1.ReasonConflict, "conflicts with NodeOverlay \"other\"")
			},
			wantLaunches: []string{"default/c6a.2xlarge/on-demand $0.3060: jobs/batch-2,jobs/batch-3"},
			wantOverlays: []whatif.OverlayUse{{Name: "m5-discount",
				NotApplied: "ValidationSucceeded=False (Conflict): conflicts with NodeOverlay \"other\""}},
			wantBefore: 0.576, wantAfter: 0.882,
			wantTable: []string{"NodeOverlays not applied: m5-discount (ValidationSucceeded=False (Conflict)"},
		},
		"of two overlays of the same weight setting the same price, the name that sorts last applies": {
			manifests: []string{discount},
			change: func(t *testing.T, m *whatif.Objects) {
				free := m.NodeOverlays[0].DeepCopy()
				free.Name, free.Spec.PriceAdjustment, free.Spec.Price = "m5-aaa", nil, new("0")
				m.NodeOverlays = append(m.NodeOverlays, free)
			},
			wantLaunches: []string{"default/m5.2xlarge/on-demand $0.1920*: jobs/batch-2,jobs/batch-3"},
			wantOverlays: []whatif.OverlayUse{
				{Name: "m5-aaa", NotApplied: `conflicts with NodeOverlay "m5-discount" of the same weight: both change the price of us-east-1a/on-demand of instance type m5.12xlarge in NodePool default; "m5-discount" is applied, this one is not`},
				{Name: "m5-discount", NodePools: []string{"default"}},
			},
			wantBefore: 0.288, wantAfter: 0.480,
		},
		"a pod requesting an FPGA no instance type lists cannot be placed": {
			manifests:         []string{fpgaPool},
			wantLaunches:      []string{"default/c6a.2xlarge/on-demand $0.3060: jobs/batch-2,jobs/batch-3"},
			wantUnschedulable: []string{"jobs/fpga-0"},
			wantBefore:        0.576, wantAfter: 0.882,
		},
		"an overlay adding example.com/fpga to f2 lets the pod launch an f2": {
			manifests: []string{fpgaPool, fpga},
			// The f2 has room for the batch pods too.
			wantLaunches: []string{"fpga/f2.6xlarge/on-demand $1.9800: jobs/fpga-0,jobs/batch-2,jobs/batch-3"},
			wantOverlays: []whatif.OverlayUse{{Name: "fpga", NodePools: []string{"fpga"}}},
			wantBefore:   0.576, wantAfter: 2.556,
			wantTable: []string{"NodeOverlays applied: fpga (NodePool fpga)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := load(t, base)
			manifests := load(t, tc.manifests...)
			if tc.change != nil {
				tc.change(t, manifests)
			}
			changed, err := whatif.Apply(objs, whatif.Changes{Manifests: manifests})
			if err != nil {
				t.Fatal(err)
			}
			res, err := whatif.Simulate(changed, whatif.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			var launches, unschedulable []string
			for _, l := range res.Launches {
				mark := ""
				if l.PriceOverlaid {
					mark = "*"
				}
				launches = append(launches, l.NodePool+"/"+l.InstanceType+"/"+l.CapacityType+" $"+format4(l.Price)+mark+": "+strings.Join(l.Pods, ","))
			}
			for _, u := range res.Unschedulable {
				unschedulable = append(unschedulable, u.Pod)
			}
			if diff := cmp.Diff(tc.wantLaunches, launches); diff != "" {
				t.Errorf("launches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnschedulable, unschedulable); diff != "" {
				t.Errorf("unschedulable (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOverlays, res.Overlays); diff != "" {
				t.Errorf("overlays (-want +got):\n%s", diff)
			}
			if !near(res.Cost.Before, tc.wantBefore) || !near(res.Cost.After, tc.wantAfter) {
				t.Errorf("cost: got $%.4f/h -> $%.4f/h, want $%.4f/h -> $%.4f/h", res.Cost.Before, res.Cost.After, tc.wantBefore, tc.wantAfter)
			}
			var out bytes.Buffer
			if err := whatif.WriteResult(&out, res); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.wantTable {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the printed plan lacks %q:\n%s", want, out.String())
				}
			}
			if len(tc.wantOverlays) == 0 && strings.Contains(out.String(), "NodeOverlay") {
				t.Errorf("the printed plan mentions NodeOverlays without any:\n%s", out.String())
			}
		})
	}
}

func format4(f float64) string { return fmt.Sprintf("%.4f", f) }

func TestExplainWithOverlays(t *testing.T) {
	overlay := filepath.Join("testdata", "discount-overlay.yaml")
	cases := map[string]struct {
		// snapshot is the cluster, with the discount overlay.
		snapshot              string
		kind, namespace, name string
		// want are lines of the printed explanation.
		want  []string
		check func(t *testing.T, e *whatif.Explanation)
	}{
		"a pending pod: provisioning launches the discounted type at the overlaid price": {
			snapshot: "base.yaml",
			kind:     "pod", namespace: "jobs", name: "batch-2",
			want: []string{
				"Dovetail would launch a NodeClaim of NodePool default for it: m5.2xlarge (us-east-1a, on-demand, $0.1920/h, price set by a NodeOverlay), with 2 pod(s)",
				"NodeOverlays applied: m5-discount (NodePool default)",
			},
		},
		// Without the pending pods: consolidation would not give the room
		// they have to node-b's pod.
		"a node: its price and its options' are the overlaid ones": {
			snapshot: "idle.yaml",
			kind:     "node", name: "node-b",
			want: []string{
				"Underutilized: deleting 1 node (m5.xlarge; $0.096/h), saving $0.096/h",
				"m5.xlarge in us-east-1b (on-demand) at $0.0960/h (set by a NodeOverlay) is the cheapest offering",
				"m5.xlarge (chosen)  us-east-1b  on-demand      0.0960*",
				"m5.2xlarge          us-east-1a  on-demand      0.1920*",
				"c5.2xlarge          us-east-1a  on-demand      0.3400 ",
			},
			check: func(t *testing.T, e *whatif.Explanation) {
				if tc := e.InstanceType; tc == nil || !near(tc.Price, 0.096) || !tc.PriceOverlaid {
					t.Errorf("instance type = %+v, want m5.xlarge at the overlaid $0.096/h", tc)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := load(t, filepath.Join("testdata", tc.snapshot), overlay)
			e, err := whatif.Explain(objs, tc.kind, tc.namespace, tc.name, whatif.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := whatif.WriteExplanation(&out, e); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the explanation lacks %q:\n%s", want, out.String())
				}
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

func TestLoadBadOverlay(t *testing.T) {
	doc := func(spec string) string {
		return "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: bad\nspec:\n" +
			"  requirements:\n  - key: karpenter.k8s.aws/instance-family\n    operator: In\n    values: [m5]\n" + spec
	}
	cases := map[string]struct {
		data string
		want whatif.InputError
	}{
		"price and priceAdjustment": {
			data: doc("  price: \"0.1\"\n  priceAdjustment: \"-10%\"\n"),
			want: whatif.InputError{Document: 1, Line: 11, Field: "spec.priceAdjustment", Message: "cannot set both spec.price and spec.priceAdjustment"},
		},
		"a percentage without its sign": {
			data: doc("  priceAdjustment: \"20%\"\n"),
			want: whatif.InputError{Document: 1, Line: 10, Field: "spec.priceAdjustment"},
		},
		"a price below -100%": {
			data: doc("  priceAdjustment: \"-150%\"\n"),
			want: whatif.InputError{Document: 1, Line: 10, Field: "spec.priceAdjustment"},
		},
		"a price that is no decimal": {
			data: doc("  price: \"1e3\"\n"),
			want: whatif.InputError{Document: 1, Line: 10, Field: "spec.price", Message: `"1e3" is not an unsigned price such as "0.25"`},
		},
		"cpu in capacity": {
			data: doc("  capacity:\n    cpu: \"4\"\n"),
			want: whatif.InputError{Document: 1, Line: 11, Field: "spec.capacity[cpu]", Message: "only extended resources may be set, not cpu"},
		},
		"weight out of range": {
			data: doc("  weight: 20000\n"),
			want: whatif.InputError{Document: 1, Line: 10, Field: "spec.weight", Message: "20000 is not between 1 and 10000"},
		},
		"In without values": {
			data: "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: bad\nspec:\n" +
				"  requirements:\n  - key: karpenter.k8s.aws/instance-family\n    operator: In\n  price: \"0.1\"\n",
			want: whatif.InputError{Document: 1, Line: 7, Field: "spec.requirements[0]"},
		},
		"a restricted key": {
			data: "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: bad\nspec:\n" +
				"  requirements:\n  - key: kubernetes.io/hostname\n    operator: Exists\n  price: \"0.1\"\n",
			want: whatif.InputError{Document: 1, Line: 7, Field: "spec.requirements[0].key", Message: `label "kubernetes.io/hostname" is restricted`},
		},
		"an unknown field": {
			data: doc("  priceAdjustmnt: \"-10%\"\n"),
			want: whatif.InputError{Document: 1, Line: 10, Field: "spec.priceAdjustmnt", Message: "unknown field"},
		},
		"the wrong apiVersion": {
			data: strings.Replace(doc("  price: \"0.1\"\n"), "v1alpha1", "v1", 1),
			want: whatif.InputError{Document: 1, Line: 1, Field: "apiVersion"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := &whatif.Objects{}
			err := whatif.Load("overlay.yaml", []byte(tc.data), objs)
			var ie *whatif.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			got := *ie
			want := tc.want
			want.Source = "overlay.yaml"
			if want.Message == "" {
				got.Message = ""
			} else if strings.Contains(got.Message, want.Message) {
				got.Message = want.Message
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if objs.Count() != 0 {
				t.Errorf("a bad overlay added %d objects", objs.Count())
			}
		})
	}
}

func TestLoadBadOverlayFile(t *testing.T) {
	path := filepath.Join("testdata", "bad-overlay.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	err = whatif.Load(path, data, &whatif.Objects{})
	want := path + ":22: document 2: field spec.priceAdjustment: cannot set both spec.price and spec.priceAdjustment"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// An overlay the controller refused is read back from a snapshot: it is
// skipped when overlays apply, as the controllers skip it.
func TestLoadKeepsARefusedOverlay(t *testing.T) {
	bad := "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: big\n  generation: 2\nspec:\n" +
		"  requirements:\n  - key: karpenter.k8s.aws/instance-cpu\n    operator: Gt\n    values: [\"99999999999999999999\"]\n  price: \"0.1\"\n" +
		"status:\n  conditions:\n  - type: ValidationSucceeded\n    status: \"False\"\n    reason: RuntimeValidation\n    message: spec.requirements[0] is bad\n" +
		"    observedGeneration: 2\n    lastTransitionTime: \"2025-01-01T00:00:00Z\"\n"
	objs := &whatif.Objects{}
	if err := whatif.Load("snapshot.yaml", []byte(bad), objs); err != nil {
		t.Fatal(err)
	}
	if len(objs.NodeOverlays) != 1 {
		t.Fatalf("got %d overlays, want 1", len(objs.NodeOverlays))
	}
	// A newer generation has not been validated: it is checked.
	stale := strings.Replace(bad, "generation: 2", "generation: 3", 1)
	if err := whatif.Load("snapshot.yaml", []byte(stale), &whatif.Objects{}); err == nil || !strings.Contains(err.Error(), "field spec.requirements[0]") {
		t.Errorf("got %v, want the requirement refused", err)
	}
}

func TestOverlaySnapshotRoundTrips(t *testing.T) {
	objs := load(t, filepath.Join("testdata", "idle.yaml"), filepath.Join("testdata", "discount-overlay.yaml"), filepath.Join("testdata", "fpga-overlay.yaml"))
	refused(t, objs, "fpga", v1alpha1.ReasonConflict, "conflict")
	var buf bytes.Buffer
	if err := whatif.Write(&buf, objs); err != nil {
		t.Fatal(err)
	}
	back := &whatif.Objects{}
	if err := whatif.Load("snapshot.yaml", buf.Bytes(), back); err != nil {
		t.Fatalf("reading the snapshot back: %v\n%s", err, buf.String())
	}
	if diff := cmp.Diff(objs.NodeOverlays, back.NodeOverlays); diff != "" {
		t.Errorf("overlays after a round trip (-want +got):\n%s", diff)
	}
	if back.Count() != objs.Count() {
		t.Errorf("got %d objects back, want %d", back.Count(), objs.Count())
	}
}
