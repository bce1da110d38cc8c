package kwok_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
)

// epoch is where the fake clocks start.
func epoch() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }

// newProvider builds a provider on a fake clock, in a partition of its own
// so that tests sharing the API server do not see each other's Nodes, and
// deletes its Nodes when the test ends.
func newProvider(t *testing.T, opts kwok.Options) (*kwok.CloudProvider, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch())
	if opts.Partition == "" {
		opts.Partition = "t-" + rand.String(8)
	}
	c, err := kwok.New(testEnv.Client, clk, opts)
	if err != nil {
		t.Fatalf("kwok.New: %v", err)
	}
	t.Cleanup(func() { deleteNodes(t, opts.Partition) })
	return c, clk
}

// deleteNodes deletes the partition's Nodes, removing their finalizers first.
func deleteNodes(t *testing.T, partition string) {
	t.Helper()
	ctx := context.Background()
	nodes := &corev1.NodeList{}
	if err := testEnv.Client.List(ctx, nodes, client.MatchingLabels{kwok.PartitionLabelKey: partition}); err != nil {
		t.Errorf("listing nodes to clean up: %v", err)
		return
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if len(node.Finalizers) > 0 {
			patch := client.MergeFrom(node.DeepCopy())
			node.Finalizers = nil
			if err := testEnv.Client.Patch(ctx, node, patch); client.IgnoreNotFound(err) != nil {
				t.Errorf("removing finalizers of node %s: %v", node.Name, err)
			}
		}
		if err := testEnv.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting node %s: %v", node.Name, err)
		}
	}
}

// createNodeClass creates a KWOKNodeClass with the given registration delay
// (nil for none), makes the NodeClass controller judge it, and deletes it
// when the test ends. The class is Ready when the function returns.
func createNodeClass(t *testing.T, delay *metav1.Duration) *kwokv1alpha1.KWOKNodeClass {
	t.Helper()
	ctx := context.Background()
	nodeClass := &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "kwok-" + rand.String(8)},
		Spec:       kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: delay},
	}
	if err := testEnv.Client.Create(ctx, nodeClass); err != nil {
		t.Fatalf("creating KWOKNodeClass: %v", err)
	}
	t.Cleanup(func() {
		if err := testEnv.Client.Delete(ctx, nodeClass); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting KWOKNodeClass %s: %v", nodeClass.Name, err)
		}
	})
	reconcileNodeClass(t, kwok.NewNodeClassController(testEnv.Client, clocktesting.NewFakeClock(epoch())), nodeClass.Name)
	return getNodeClass(t, nodeClass.Name)
}

// reconcileNodeClass runs the NodeClass controller once on the stored class.
func reconcileNodeClass(t *testing.T, c *kwok.NodeClassController, name string) {
	t.Helper()
	if _, err := c.Reconcile(context.Background(), getNodeClass(t, name)); err != nil {
		t.Fatalf("reconciling KWOKNodeClass %s: %v", name, err)
	}
}

// getNodeClass reads a KWOKNodeClass, failing the test if it cannot.
func getNodeClass(t *testing.T, name string) *kwokv1alpha1.KWOKNodeClass {
	t.Helper()
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, nodeClass); err != nil {
		t.Fatalf("getting KWOKNodeClass %s: %v", name, err)
	}
	return nodeClass
}

// kwokRef references a KWOKNodeClass.
func kwokRef(name string) *v1.NodeClassReference {
	return &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: name}
}

// newClaim returns an (unsaved) NodeClaim of NodePool "default" for the
// class, with the given requirements and a request of 1 cpu.
func newClaim(nodeClassName string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-" + rand.String(8), Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{Requirements: reqs, NodeClassRef: kwokRef(nodeClassName)},
			Resources:             v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
}

// in is the requirement "key In values".
func in(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// getNode reads a Node, failing the test if it cannot.
func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("getting node %s: %v", name, err)
	}
	return node
}

// expectNoNode fails the test if a Node with the name exists.
func expectNoNode(t *testing.T, name string) {
	t.Helper()
	err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Node{})
	if client.IgnoreNotFound(err) != nil {
		t.Fatalf("getting node %s: %v", name, err)
	}
	if err == nil {
		t.Fatalf("node %s exists, want none", name)
	}
}

// listedIDs returns the provider IDs List reports.
func listedIDs(t *testing.T, c *kwok.CloudProvider) []string {
	t.Helper()
	claims, err := c.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	ids := []string{}
	for _, nc := range claims {
		ids = append(ids, nc.Status.ProviderID)
	}
	return ids
}

// storeClaim creates the claim in the API server, as the core does before
// launching, and deletes it (finalizers removed) when the test ends.
func storeClaim(t *testing.T, claim *v1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	if claim.Spec.Requirements == nil {
		claim.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	}
	if err := testEnv.Client.Create(ctx, claim); err != nil {
		t.Fatalf("creating nodeclaim %s: %v", claim.Name, err)
	}
	t.Cleanup(func() {
		stored := &v1.NodeClaim{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(claim), stored); err != nil {
			return
		}
		if len(stored.Finalizers) > 0 {
			patch := client.MergeFrom(stored.DeepCopy())
			stored.Finalizers = nil
			_ = testEnv.Client.Patch(ctx, stored, patch)
		}
		_ = testEnv.Client.Delete(ctx, stored)
	})
}

// persistLaunch stores what Create returned on the stored claim, as the
// core's launch does: the labels, provider ID, capacity and allocatable. It
// returns the stored claim.
func persistLaunch(t *testing.T, created *v1.NodeClaim) *v1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	stored := getClaim(t, created.Name)
	patch := client.MergeFrom(stored.DeepCopy())
	stored.Labels = created.Labels
	if err := testEnv.Client.Patch(ctx, stored, patch); err != nil {
		t.Fatalf("storing the labels of nodeclaim %s: %v", created.Name, err)
	}
	patch = client.MergeFrom(stored.DeepCopy())
	stored.Status.ProviderID = created.Status.ProviderID
	stored.Status.Capacity = created.Status.Capacity
	stored.Status.Allocatable = created.Status.Allocatable
	if err := testEnv.Client.Status().Patch(ctx, stored, patch); err != nil {
		t.Fatalf("storing the status of nodeclaim %s: %v", created.Name, err)
	}
	return getClaim(t, created.Name)
}

// getClaim reads a NodeClaim, failing the test if it cannot.
func getClaim(t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	nodeClaim := &v1.NodeClaim{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, nodeClaim); err != nil {
		t.Fatalf("getting nodeclaim %s: %v", name, err)
	}
	return nodeClaim
}
