package conversion_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
)

// listingLabel marks the objects of the listing test, so that objects
// other tests left behind do not show.
const listingLabel = "dovetail.test/listing"

// listed is what a listing says of one object.
type listed struct {
	APIVersion, Name, NodeClass string
}

// TestListingsThroughBothVersions lists NodePools, NodeClaims and
// EC2NodeClasses written through either version the way kubectl does:
// `kubectl get nodepools.v1beta1.karpenter.sh` (a v1beta1 list, every item
// converted by the webhook) and `kubectl get nodepools` (v1, the stored
// version), as objects and as the API server's Table with the printer
// columns of each version.
func TestListingsThroughBothVersions(t *testing.T) {
	serveConversions(t)
	for i, manifest := range []string{
		`{apiVersion: karpenter.sh/v1beta1, kind: NodePool, spec: {weight: 10, template: {spec: {nodeClassRef: {name: class-a}, requirements: []}}, disruption: {consolidationPolicy: WhenUnderutilized}}}`,
		`{apiVersion: karpenter.sh/v1beta1, kind: NodePool, spec: {template: {spec: {nodeClassRef: {name: class-b, kind: EC2NodeClass, apiVersion: karpenter.k8s.aws/v1beta1}, requirements: []}}, disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}}}`,
		`{apiVersion: karpenter.sh/v1, kind: NodePool, spec: {weight: 50, template: {spec: {nodeClassRef: {name: class-c, kind: EC2NodeClass, group: karpenter.k8s.aws}, requirements: [], expireAfter: 720h}}, disruption: {consolidateAfter: 0s}}}`,
		`{apiVersion: karpenter.sh/v1beta1, kind: NodeClaim, spec: {nodeClassRef: {name: class-a}, requirements: []}}`,
		`{apiVersion: karpenter.sh/v1, kind: NodeClaim, spec: {nodeClassRef: {name: class-c, kind: EC2NodeClass, group: karpenter.k8s.aws}, requirements: [], expireAfter: 24h}}`,
		`{apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, spec: {amiFamily: AL2023, role: node-role, subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}}`,
		`{apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass, spec: {amiSelectorTerms: [{alias: bottlerocket@latest}], role: node-role, subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}}`,
	} {
		obj := object(t, manifest)
		obj.SetName(fmt.Sprintf("listing-%d", i))
		obj.SetLabels(map[string]string{listingLabel: "true"})
		create(t, obj)
	}

	want := map[string][]listed{
		"NodePool":     {{"", "listing-0", "class-a"}, {"", "listing-1", "class-b"}, {"", "listing-2", "class-c"}},
		"NodeClaim":    {{"", "listing-3", "class-a"}, {"", "listing-4", "class-c"}},
		"EC2NodeClass": {{"", "listing-5", ""}, {"", "listing-6", ""}},
	}
	nodeClassPath := map[string]string{"NodePool": "spec.template.spec.nodeClassRef.name", "NodeClaim": "spec.nodeClassRef.name", "EC2NodeClass": "spec.nothing"}
	for kind, objects := range want {
		for _, version := range []string{"v1", "v1beta1"} {
			t.Run(kind+"/"+version, func(t *testing.T) {
				list, err := dyn(t, kind, version).List(context.Background(), metav1.ListOptions{LabelSelector: listingLabel})
				if err != nil {
					t.Fatalf("listing %s as %s: %v", kind, version, err)
				}
				var got []listed
				for _, item := range list.Items {
					got = append(got, listed{item.GetAPIVersion(), item.GetName(), str(&item, nodeClassPath[kind])})
				}
				wantItems := []listed{}
				for _, o := range objects {
					wantItems = append(wantItems, listed{resourceFor(t, kind, version).GroupVersion().String(), o.Name, o.NodeClass})
				}
				if diff := cmp.Diff(wantItems, got); diff != "" {
					t.Errorf("list mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}

	// The Table output, as `kubectl get` and `kubectl get -o wide` print it.
	tables := map[string]struct {
		path    string
		columns []string
		rows    [][]any
	}{
		"nodepools.v1beta1.karpenter.sh": {
			path:    "/apis/karpenter.sh/v1beta1/nodepools",
			columns: []string{"Name", "NodeClass", "Weight"},
			// The v1beta1 CRD declares Weight a string column, as Karpenter's did.
			rows: [][]any{{"listing-0", "class-a", "10"}, {"listing-1", "class-b", nil}, {"listing-2", "class-c", "50"}},
		},
		"nodepools (v1)": {
			path:    "/apis/karpenter.sh/v1/nodepools",
			columns: []string{"Name", "NodeClass", "Nodes", "Ready", "Age", "Weight", "CPU", "Memory"},
			rows:    [][]any{{"listing-0", "class-a", nil, nil, "*", float64(10), nil, nil}, {"listing-1", "class-b", nil, nil, "*", nil, nil, nil}, {"listing-2", "class-c", nil, nil, "*", float64(50), nil, nil}},
		},
		"nodeclaims.v1beta1.karpenter.sh": {
			path:    "/apis/karpenter.sh/v1beta1/nodeclaims",
			columns: []string{"Name", "Type", "Zone", "Node", "Ready", "Age", "Capacity", "NodePool", "NodeClass"},
			rows:    [][]any{{"listing-3", nil, nil, nil, nil, "*", nil, nil, "class-a"}, {"listing-4", nil, nil, nil, nil, "*", nil, nil, "class-c"}},
		},
		"ec2nodeclasses.v1beta1.karpenter.k8s.aws": {
			path:    "/apis/karpenter.k8s.aws/v1beta1/ec2nodeclasses",
			columns: []string{"Name", "Ready", "Age", "Role"},
			rows:    [][]any{{"listing-5", nil, "*", "node-role"}, {"listing-6", nil, "*", "node-role"}},
		},
	}
	for name, tc := range tables {
		t.Run("table "+name, func(t *testing.T) {
			columns, rows := table(t, tc.path)
			if diff := cmp.Diff(tc.columns, columns); diff != "" {
				t.Errorf("columns mismatch (-want +got):\n%s", diff)
			}
			for _, row := range rows {
				for i, cell := range row {
					if columns[i] == "Age" && cell != nil {
						row[i] = "*" // any age
					}
				}
			}
			if diff := cmp.Diff(tc.rows, rows); diff != "" {
				t.Errorf("rows mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubectlGet runs kubectl itself, when the bin directory has it (the
// control-plane build puts it there), on the listing test's objects.
func TestKubectlGet(t *testing.T) {
	serveConversions(t)
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(binDir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("no kubectl in %s (hack/build-controlplane.sh builds it): %v", binDir, err)
	}
	for i, manifest := range []string{
		`{apiVersion: karpenter.sh/v1beta1, kind: NodePool, spec: {weight: 10, template: {spec: {nodeClassRef: {name: class-a}, requirements: []}}, disruption: {consolidationPolicy: WhenUnderutilized}}}`,
		`{apiVersion: karpenter.sh/v1, kind: NodePool, spec: {weight: 50, template: {spec: {nodeClassRef: {name: class-c, kind: EC2NodeClass, group: karpenter.k8s.aws}, requirements: [], expireAfter: 720h}}, disruption: {consolidateAfter: 0s}}}`,
	} {
		obj := object(t, manifest)
		obj.SetName(fmt.Sprintf("kubectl-%d", i))
		obj.SetLabels(map[string]string{listingLabel: "true"})
		create(t, obj)
	}
	cases := map[string]struct {
		resource string
		want     [][]string
	}{
		"kubectl get nodepools.v1beta1.karpenter.sh -o wide": {
			resource: "nodepools.v1beta1.karpenter.sh",
			want:     [][]string{{"NAME", "NODECLASS", "WEIGHT"}, {"kubectl-0", "class-a", "10"}, {"kubectl-1", "class-c", "50"}},
		},
		"kubectl get nodepools -o wide": {
			resource: "nodepools",
			want:     [][]string{{"NAME", "NODECLASS", "NODES", "READY", "WEIGHT", "CPU", "MEMORY"}, {"kubectl-0", "class-a", "", "", "10", "", ""}, {"kubectl-1", "class-c", "", "", "50", "", ""}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", testEnv.ControlPlane.KubeconfigPath,
				"get", tc.resource, "-l", listingLabel, "-o", "wide").CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl get %s: %v\n%s", tc.resource, err, out)
			}
			got := kubectlColumns(string(out), "AGE")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kubectl output mismatch (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}

// kubectlColumns splits kubectl's table output into cells by the columns
// of its header (empty cells are blank), leaving out the column skip.
func kubectlColumns(out, skip string) [][]string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	var rows [][]string
	for _, line := range lines {
		var row []string
		for c, start := range starts {
			end := len(line)
			if c+1 < len(starts) && starts[c+1] < end {
				end = starts[c+1]
			}
			cell := ""
			if start < len(line) {
				cell = strings.TrimSpace(line[start:end])
			}
			if strings.Fields(header[start:])[0] == skip {
				continue
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	return rows
}

// table lists path through the API server's Table output and returns the
// column names and the rows' cells (sorted by name), unset cells as nil.
func table(t *testing.T, path string) ([]string, [][]any) {
	t.Helper()
	raw, err := testEnv.Clientset.Discovery().RESTClient().Get().AbsPath(path).
		Param("labelSelector", listingLabel).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(context.Background())
	if err != nil {
		t.Fatalf("listing %s as a table: %v", path, err)
	}
	tbl := &metav1.Table{}
	if err := json.Unmarshal(raw, tbl); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	var columns []string
	for _, c := range tbl.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	var rows [][]any
	for _, r := range tbl.Rows {
		rows = append(rows, append([]any(nil), r.Cells...))
	}
	sort.Slice(rows, func(i, j int) bool { return fmt.Sprint(rows[i][0]) < fmt.Sprint(rows[j][0]) })
	return columns, rows
}
