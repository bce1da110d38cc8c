package api_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// column is what the API server's table output says about one column.
type column struct {
	Name     string
	Priority int32
}

// table fetches a resource through the API server's Table output, the way
// `kubectl get` does, and returns the columns and the cells of the named row.
func table(t *testing.T, resource, name string) ([]column, map[string]any) {
	t.Helper()
	config := rest.CopyConfig(testEnv.ControlPlane.RESTConfig)
	config.GroupVersion = &v1.SchemeGroupVersion
	config.APIPath = "/apis"
	config.NegotiatedSerializer = nil
	restClient, err := rest.UnversionedRESTClientFor(withCodecs(config))
	if err != nil {
		t.Fatalf("creating REST client: %v", err)
	}
	raw, err := restClient.Get().Resource(resource).Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading %s/%s as a table: %v", resource, name, err)
	}
	tbl := &metav1.Table{}
	if err := decodeJSON(raw, tbl); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	var columns []column
	for _, c := range tbl.ColumnDefinitions {
		columns = append(columns, column{Name: c.Name, Priority: c.Priority})
	}
	if len(tbl.Rows) != 1 {
		t.Fatalf("table has %d rows, want 1", len(tbl.Rows))
	}
	cells := map[string]any{}
	for i, c := range tbl.ColumnDefinitions {
		cells[c.Name] = tbl.Rows[0].Cells[i]
	}
	return columns, cells
}

// TestNodePoolPrinterColumns checks `kubectl get nodepools -o wide`:
// NAME NODECLASS NODES READY AGE WEIGHT CPU MEMORY, the last three wide only.
func TestNodePoolPrinterColumns(t *testing.T) {
	ctx := context.Background()
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "columns"},
		Spec: v1.NodePoolSpec{
			Weight: ptr.To[int32](100),
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
			}},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("0s")},
		},
	}
	if err := testEnv.Client.Create(ctx, np); err != nil {
		t.Fatalf("creating NodePool: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, np) })
	np.Status.Resources = corev1.ResourceList{
		"nodes": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("160Gi"),
	}
	meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: ""})
	if err := testEnv.Client.Status().Update(ctx, np); err != nil {
		t.Fatalf("updating NodePool status: %v", err)
	}

	columns, cells := table(t, "nodepools", np.Name)
	want := []column{{"Name", 0}, {"NodeClass", 0}, {"Nodes", 0}, {"Ready", 0}, {"Age", 0}, {"Weight", 1}, {"CPU", 1}, {"Memory", 1}}
	if diff := cmp.Diff(want, columns); diff != "" {
		t.Errorf("columns mismatch (-want +got):\n%s", diff)
	}
	wantCells := map[string]any{"Name": "columns", "NodeClass": "default", "Nodes": "4", "Ready": "True", "Weight": float64(100), "CPU": "10", "Memory": "160Gi"}
	for name, value := range wantCells {
		if diff := cmp.Diff(value, cells[name]); diff != "" {
			t.Errorf("cell %s mismatch (-want +got):\n%s", name, diff)
		}
	}
}

// TestNodeClaimPrinterColumns checks `kubectl get nodeclaims -o wide`:
// NAME TYPE CAPACITY ZONE NODE READY AGE ID NODEPOOL NODECLASS, the last three wide only.
func TestNodeClaimPrinterColumns(t *testing.T) {
	ctx := context.Background()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "columns", Labels: map[string]string{
			corev1.LabelInstanceTypeStable: "c6gn.large",
			v1.CapacityTypeLabelKey:        v1.CapacityTypeSpot,
			corev1.LabelTopologyZone:       "us-west-2b",
			v1.NodePoolLabelKey:            "default",
		}},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}},
			ExpireAfter:  v1.MustParseNillableDuration("720h"),
		}},
	}
	if err := testEnv.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating NodeClaim: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, nc) })
	nc.Status.NodeName = "ip-192-168-183-234.us-west-2.compute.internal"
	nc.Status.ProviderID = "aws:///us-west-2b/i-053c6b324e29d2275"
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := testEnv.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating NodeClaim status: %v", err)
	}

	columns, cells := table(t, "nodeclaims", nc.Name)
	want := []column{{"Name", 0}, {"Type", 0}, {"Capacity", 0}, {"Zone", 0}, {"Node", 0}, {"Ready", 0}, {"Age", 0}, {"ID", 1}, {"NodePool", 1}, {"NodeClass", 1}}
	if diff := cmp.Diff(want, columns); diff != "" {
		t.Errorf("columns mismatch (-want +got):\n%s", diff)
	}
	wantCells := map[string]any{
		"Type": "c6gn.large", "Capacity": "spot", "Zone": "us-west-2b", "Node": nc.Status.NodeName, "Ready": "True",
		"ID": nc.Status.ProviderID, "NodePool": "default", "NodeClass": "default",
	}
	for name, value := range wantCells {
		if diff := cmp.Diff(value, cells[name]); diff != "" {
			t.Errorf("cell %s mismatch (-want +got):\n%s", name, diff)
		}
	}
}
