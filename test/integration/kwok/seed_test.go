package kwok_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/manifests"
)

// seedNodePool loads the general-purpose NodePool of the upstream examples
// (instance-category In [c, m, r], instance-generation Gt 2, amd64, linux,
// on-demand), as users apply it.
func seedNodePool(t *testing.T) *v1.NodePool {
	t.Helper()
	objects, err := manifests.Load("../../conformance/examples/v1/general-purpose.yaml", map[string]string{"CLUSTER_NAME": "dovetail-test"})
	if err != nil {
		t.Fatalf("loading the example: %v", err)
	}
	for _, obj := range objects {
		if obj.GetKind() != "NodePool" {
			continue
		}
		pool := &v1.NodePool{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pool); err != nil {
			t.Fatalf("converting the example NodePool: %v", err)
		}
		return pool
	}
	t.Fatal("the example has no NodePool")
	return nil
}

// TestSeedNodePoolRequirements points the example NodePool at a
// KWOKNodeClass, changing nothing else, and launches a NodeClaim made from
// it: the node is the cheapest matching type, with every label.
func TestSeedNodePoolRequirements(t *testing.T) {
	ctx := context.Background()
	c, _ := newProvider(t, kwok.Options{})
	nodeClass := createNodeClass(t, nil)

	// 1. The NodePool and a NodeClaim made from it are admitted as they are.
	pool := seedNodePool(t)
	pool.Name = "general-purpose-" + rand.String(6)
	pool.Spec.Template.Spec.NodeClassRef = kwokRef(nodeClass.Name)
	if err := testEnv.Client.Create(ctx, pool); err != nil {
		t.Fatalf("creating NodePool: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, pool) })
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: pool.Name + "-" + rand.String(5), Labels: map[string]string{v1.NodePoolLabelKey: pool.Name}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: pool.Spec.Template.Spec,
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("3"),
			}},
		},
	}
	if err := testEnv.Client.Create(ctx, claim); err != nil {
		t.Fatalf("creating NodeClaim: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, claim) })

	// 2. The cheapest on-demand c/m/r of generation 3+ whose allocatable
	// fits 1 cpu: the 1-vCPU types keep only 940m, so a 2-vCPU c6a.large.
	created, err := c.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	node := getNode(t, claim.Name)
	want := map[string]string{
		corev1.LabelInstanceTypeStable:        "c6a.large",
		corev1.LabelTopologyZone:              "us-east-1a",
		corev1.LabelTopologyRegion:            "us-east-1",
		v1.CapacityTypeLabelKey:               v1.CapacityTypeOnDemand,
		corev1.LabelArchStable:                "amd64",
		corev1.LabelOSStable:                  "linux",
		v1.NodePoolLabelKey:                   pool.Name,
		corev1.LabelHostname:                  claim.Name,
		catalog.LabelInstanceCategory:         "c",
		catalog.LabelInstanceGeneration:       "6",
		catalog.LabelInstanceFamily:           "c6a",
		catalog.LabelInstanceSize:             "large",
		catalog.LabelInstanceCPU:              "2",
		catalog.LabelInstanceMemory:           "4096",
		catalog.LabelInstanceCPUManufacturer:  "amd",
		catalog.LabelInstanceHypervisor:       "nitro",
		catalog.LabelInstanceCapabilityFlex:   "false",
		catalog.LabelInstanceNetworkBandwidth: "781",
		catalog.LabelInstanceEBSBandwidth:     "10000",
	}
	got := map[string]string{}
	for key := range want {
		got[key] = node.Labels[key]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node labels (-want +got):\n%s", diff)
	}
	if got := created.Labels[corev1.LabelInstanceTypeStable]; got != "c6a.large" {
		t.Errorf("returned claim has instance type %q, want c6a.large", got)
	}

	// 3. Every label of the catalog's c6a.large is on the node, and the node
	// satisfies the NodePool's requirements.
	its, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name != "c6a.large" {
			continue
		}
		for key, value := range it.Labels {
			if node.Labels[key] != value {
				t.Errorf("node label %s = %q, catalog says %q", key, node.Labels[key], value)
			}
		}
		if diff := cmp.Diff(it.Allocatable.Memory().String(), node.Status.Allocatable.Memory().String()); diff != "" {
			t.Errorf("allocatable memory (-catalog +node):\n%s", diff)
		}
	}
	reqs, err := requirements.FromNodePoolRequirements(pool.Spec.Template.Spec.Requirements)
	if err != nil {
		t.Fatal(err)
	}
	if !reqs.Matches(node.Labels) {
		t.Errorf("node labels do not satisfy the NodePool requirements %s", reqs)
	}
}
