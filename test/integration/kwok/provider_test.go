package kwok_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
)

// TestKwokAnnotationMatchesControlPlane guards the contract with the local
// control plane: kwok manages exactly the Nodes the provider annotates.
func TestKwokAnnotationMatchesControlPlane(t *testing.T) {
	if kwok.KwokNodeAnnotationKey != controlplane.KwokNodeAnnotationKey || kwok.KwokNodeAnnotationValue != controlplane.KwokNodeAnnotationValue {
		t.Errorf("provider annotates %s=%s, kwok manages %s=%s", kwok.KwokNodeAnnotationKey, kwok.KwokNodeAnnotationValue,
			controlplane.KwokNodeAnnotationKey, controlplane.KwokNodeAnnotationValue)
	}
}

// TestCreateGetListDelete launches an instance, finds it, launches it again
// (getting the same one) and deletes it.
func TestCreateGetListDelete(t *testing.T) {
	ctx := context.Background()
	c, _ := newProvider(t, kwok.Options{})
	nodeClass := createNodeClass(t, nil)
	claim := newClaim(nodeClass.Name, in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large"), in(corev1.LabelTopologyZone, "us-east-1b"))

	// 1. Create: the cheapest of the listed types in the zone, filled in.
	created, err := c.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	providerID := "kwok://" + claim.Name
	got := map[string]string{
		"providerID":    created.Status.ProviderID,
		"instance-type": created.Labels[corev1.LabelInstanceTypeStable],
		"zone":          created.Labels[corev1.LabelTopologyZone],
		"capacity-type": created.Labels[v1.CapacityTypeLabelKey],
		"nodepool":      created.Labels[v1.NodePoolLabelKey],
		"cpu":           created.Status.Capacity.Cpu().String(),
		"allocatable":   created.Status.Allocatable.Cpu().String(),
	}
	want := map[string]string{
		"providerID": providerID, "instance-type": "c5.large", "zone": "us-east-1b", "capacity-type": v1.CapacityTypeSpot,
		"nodepool": "default", "cpu": "2", "allocatable": "1930m",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created claim (-want +got):\n%s", diff)
	}

	// 2. The Node: handed to kwok at once (no delay), tainted until registered.
	node := getNode(t, claim.Name)
	if node.Spec.ProviderID != providerID || node.Annotations[kwok.KwokNodeAnnotationKey] != kwok.KwokNodeAnnotationValue {
		t.Errorf("node providerID %q, annotations %v", node.Spec.ProviderID, node.Annotations)
	}
	// The API server's admission adds the not-ready taint to every new Node;
	// the node lifecycle controller (not running here) removes it once Ready.
	wantTaints := []corev1.Taint{v1.UnregisteredNoExecuteTaint(), {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(wantTaints, node.Spec.Taints); diff != "" {
		t.Errorf("node taints (-want +got):\n%s", diff)
	}
	if node.Status.Allocatable.Memory().String() != "3114Mi" || node.Labels[corev1.LabelHostname] != claim.Name {
		t.Errorf("node allocatable memory %s, hostname %q", node.Status.Allocatable.Memory(), node.Labels[corev1.LabelHostname])
	}

	// 3. Get and List find it.
	found, err := c.Get(ctx, providerID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if found.Labels[corev1.LabelInstanceTypeStable] != "c5.large" || found.Status.Capacity.Cpu().String() != "2" {
		t.Errorf("Get = labels %v, capacity %v", found.Labels, found.Status.Capacity)
	}
	if diff := cmp.Diff([]string{providerID}, listedIDs(t, c)); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	// 4. Create again: the same instance, no second Node.
	again, err := c.Create(ctx, claim)
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	if again.Status.ProviderID != providerID || again.Labels[corev1.LabelInstanceTypeStable] != "c5.large" {
		t.Errorf("second Create = %s of type %s", again.Status.ProviderID, again.Labels[corev1.LabelInstanceTypeStable])
	}
	if diff := cmp.Diff([]string{providerID}, listedIDs(t, c)); diff != "" {
		t.Errorf("List after second Create (-want +got):\n%s", diff)
	}

	// 5. Delete: gone, and NotFound from then on.
	if err := c.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want NodeClaimNotFoundError", err)
	}
	expectNoNode(t, claim.Name)
	if _, err := c.Get(ctx, providerID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after Delete = %v, want NodeClaimNotFoundError", err)
	}
	if got := listedIDs(t, c); len(got) != 0 {
		t.Errorf("List after Delete = %v, want none", got)
	}
	if err := c.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete = %v, want NodeClaimNotFoundError", err)
	}
}

// TestDeleteNodeWithFinalizer deletes a Node that the core still holds with
// its termination finalizer: the instance counts as gone at once.
func TestDeleteNodeWithFinalizer(t *testing.T) {
	ctx := context.Background()
	c, _ := newProvider(t, kwok.Options{})
	created, err := c.Create(ctx, newClaim(createNodeClass(t, nil).Name, in(corev1.LabelInstanceTypeStable, "m5.large")))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	node := getNode(t, created.Name)
	patch := client.MergeFrom(node.DeepCopy())
	node.Finalizers = []string{v1.TerminationFinalizer}
	if err := testEnv.Client.Patch(ctx, node, patch); err != nil {
		t.Fatalf("adding finalizer: %v", err)
	}
	if err := c.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want NodeClaimNotFoundError", err)
	}
	if getNode(t, created.Name).DeletionTimestamp == nil {
		t.Fatal("node not being deleted after Delete")
	}
	if _, err := c.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of a node being deleted = %v, want NodeClaimNotFoundError", err)
	}
	if got := listedIDs(t, c); len(got) != 0 {
		t.Errorf("List with a node being deleted = %v, want none", got)
	}
	if _, err := c.Create(ctx, created); err == nil {
		t.Error("Create while the claim's node is being deleted succeeded")
	}
}

// TestPartitionsAreSeparate checks that a provider sees only the Nodes of its
// own partition, and refuses to take over a Node it did not launch.
func TestPartitionsAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, _ := newProvider(t, kwok.Options{})
	b, _ := newProvider(t, kwok.Options{})
	claim := newClaim(createNodeClass(t, nil).Name, in(corev1.LabelInstanceTypeStable, "m5.large"))
	created, err := a.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := listedIDs(t, b); len(got) != 0 {
		t.Errorf("other partition lists %v", got)
	}
	if _, err := b.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("other partition Get = %v, want NodeClaimNotFoundError", err)
	}
	if err := b.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("other partition Delete = %v, want NodeClaimNotFoundError", err)
	}
	getNode(t, claim.Name)
	if _, err := b.Create(ctx, claim); !cloudprovider.IsCreateError(err) {
		t.Errorf("other partition Create of a taken name = %v, want CreateError", err)
	}
}

// TestConcurrentCreateOfOneClaim launches the same claim from many
// goroutines: all get the same instance and there is one Node.
func TestConcurrentCreateOfOneClaim(t *testing.T) {
	ctx := context.Background()
	c, _ := newProvider(t, kwok.Options{})
	claim := newClaim(createNodeClass(t, nil).Name, in(corev1.LabelInstanceTypeStable, "m5.large", "m6i.large"))
	results := make([]string, 6)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			nc, err := c.Create(ctx, claim)
			if err != nil {
				t.Errorf("Create %d: %v", i, err)
				return
			}
			results[i] = nc.Status.ProviderID + " " + nc.Labels[corev1.LabelInstanceTypeStable]
		})
	}
	wg.Wait()
	for i, r := range results {
		if r != results[0] {
			t.Errorf("Create %d returned %q, Create 0 %q", i, r, results[0])
		}
	}
	if got := listedIDs(t, c); len(got) != 1 {
		t.Errorf("List = %v, want one instance", got)
	}
}

// TestLaunchDelay checks that Create blocks for the launch delay on the
// injected clock, and gives up without a Node when its context ends.
func TestLaunchDelay(t *testing.T) {
	ctx := context.Background()
	c, clk := newProvider(t, kwok.Options{LaunchDelay: 20 * time.Second})
	nodeClass := createNodeClass(t, nil)

	claim := newClaim(nodeClass.Name, in(corev1.LabelInstanceTypeStable, "m5.large"))
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, claim)
		done <- err
	}()
	waitForTimer(t, clk.HasWaiters)
	expectNoNode(t, claim.Name)
	clk.Step(20 * time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Create: %v", err)
	}
	getNode(t, claim.Name)

	cancelled := newClaim(nodeClass.Name, in(corev1.LabelInstanceTypeStable, "m5.large"))
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := c.Create(cctx, cancelled)
		done <- err
	}()
	waitForTimer(t, clk.HasWaiters)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Create with a cancelled context succeeded")
	}
	expectNoNode(t, cancelled.Name)
}

// waitForTimer polls until the fake clock has a timer, failing after 30s.
func waitForTimer(t *testing.T, hasWaiters func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return hasWaiters(), nil })
	if err != nil {
		t.Fatalf("waiting for Create to wait on the fake clock: %v", err)
	}
}
