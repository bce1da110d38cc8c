package kwok_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
)

// reconcileClaim runs a registration controller once on the stored claim.
func reconcileClaim(t *testing.T, rc *kwok.RegistrationController, name string) reconcile.Result {
	t.Helper()
	res, err := rc.Reconcile(context.Background(), getClaim(t, name))
	if err != nil {
		t.Fatalf("reconciling nodeclaim %s: %v", name, err)
	}
	return res
}

// registerAfter renders a time as RegisterAfterLabelKey does.
func registerAfter(d time.Duration) string {
	return strconv.FormatInt(epoch().Add(d).UnixNano(), 10)
}

// TestRegistrationDelayIsRestartSafe launches an instance with a 2-minute
// registration delay: it is reported while it boots, has no Node until the
// delay has passed, and a controller that "restarts" half way creates it.
func TestRegistrationDelayIsRestartSafe(t *testing.T) {
	ctx := context.Background()
	c, clk := newProvider(t, kwok.Options{})
	claim := newClaim(createNodeClass(t, &metav1.Duration{Duration: 2 * time.Minute}).Name, in(corev1.LabelInstanceTypeStable, "m5.large"))
	storeClaim(t, claim)

	// 1. Launched: the claim records the instance; there is no Node yet.
	created, err := c.Create(ctx, getClaim(t, claim.Name))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got, want := created.Labels[kwok.RegisterAfterLabelKey], registerAfter(2*time.Minute); got != want {
		t.Errorf("registration time = %q, want %q", got, want)
	}
	if created.Status.ProviderID != "kwok://"+claim.Name || created.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
		t.Errorf("created claim = %s of type %q", created.Status.ProviderID, created.Labels[corev1.LabelInstanceTypeStable])
	}
	expectNoNode(t, claim.Name)
	stored := persistLaunch(t, created)

	// 2. The booting instance is reported, and launching it again is a no-op.
	if _, err := c.Get(ctx, created.Status.ProviderID); err != nil {
		t.Errorf("Get of a booting instance: %v", err)
	}
	if diff := cmp.Diff([]string{created.Status.ProviderID}, listedIDs(t, c)); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	again, err := c.Create(ctx, stored)
	if err != nil || again.Labels[kwok.RegisterAfterLabelKey] != created.Labels[kwok.RegisterAfterLabelKey] {
		t.Errorf("second Create = %v, %v; want the booting instance", again.Labels, err)
	}
	rc := kwok.NewRegistrationController(testEnv.Client, clk, c)
	if diff := cmp.Diff(reconcile.Result{RequeueAfter: 2 * time.Minute}, reconcileClaim(t, rc, claim.Name)); diff != "" {
		t.Errorf("first reconcile (-want +got):\n%s", diff)
	}
	expectNoNode(t, claim.Name)

	// 3. The process restarts after 90s: new provider, new controller.
	clk.Step(90 * time.Second)
	restarted, err := kwok.New(testEnv.Client, clk, kwok.Options{Partition: c.Partition()})
	if err != nil {
		t.Fatal(err)
	}
	rc = kwok.NewRegistrationController(testEnv.Client, clk, restarted)
	if diff := cmp.Diff(reconcile.Result{RequeueAfter: 30 * time.Second}, reconcileClaim(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile after restart (-want +got):\n%s", diff)
	}
	expectNoNode(t, claim.Name)

	// 4. At the registration time the Node appears, handed to kwok and owned
	// by the claim, once.
	clk.Step(30 * time.Second)
	if diff := cmp.Diff(reconcile.Result{}, reconcileClaim(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile at the registration time (-want +got):\n%s", diff)
	}
	node := getNode(t, claim.Name)
	if got := node.Annotations[kwok.KwokNodeAnnotationKey]; got != kwok.KwokNodeAnnotationValue {
		t.Errorf("kwok annotation = %q, want %q", got, kwok.KwokNodeAnnotationValue)
	}
	wantOwners := []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: claim.Name, UID: stored.UID}}
	if diff := cmp.Diff(wantOwners, node.OwnerReferences); diff != "" {
		t.Errorf("node owners (-want +got):\n%s", diff)
	}
	if node.Labels[corev1.LabelInstanceTypeStable] != "m5.large" || node.Status.Allocatable.Memory().String() != "6903Mi" {
		t.Errorf("node labels %v, allocatable %v", node.Labels, node.Status.Allocatable)
	}
	if diff := cmp.Diff(reconcile.Result{}, reconcileClaim(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile with the node present (-want +got):\n%s", diff)
	}
	if got := getNode(t, claim.Name); got.ResourceVersion != node.ResourceVersion {
		t.Error("reconciling with the node present changed it")
	}
	found, err := restarted.Get(ctx, created.Status.ProviderID)
	if err != nil || found.Status.NodeName != claim.Name {
		t.Errorf("Get after registration = %+v, %v", found, err)
	}

	// 5. Once the core has registered the Node, a lost Node is never remade.
	patch := client.MergeFrom(stored.DeepCopy())
	stored.Status.NodeName = claim.Name
	if err := testEnv.Client.Status().Patch(ctx, stored, patch); err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	reconcileClaim(t, rc, claim.Name)
	expectNoNode(t, claim.Name)
	if _, err := restarted.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of a registered instance whose node is gone = %v, want NodeClaimNotFoundError", err)
	}
}

// TestDeleteWhileBooting deletes the claim of a booting instance, as the
// core does: the instance is gone at once and its Node never appears.
func TestDeleteWhileBooting(t *testing.T) {
	ctx := context.Background()
	c, clk := newProvider(t, kwok.Options{RegistrationDelay: time.Minute})
	claim := newClaim(createNodeClass(t, nil).Name, in(corev1.LabelInstanceTypeStable, "m5.large"))
	claim.Finalizers = []string{v1.TerminationFinalizer}
	storeClaim(t, claim)
	created, err := c.Create(ctx, getClaim(t, claim.Name))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	persistLaunch(t, created)
	if err := testEnv.Client.Delete(ctx, getClaim(t, claim.Name)); err != nil {
		t.Fatal(err)
	}
	deleting := getClaim(t, claim.Name)
	if deleting.DeletionTimestamp == nil {
		t.Fatal("claim not being deleted")
	}
	if err := c.Delete(ctx, deleting); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete = %v, want NodeClaimNotFoundError", err)
	}
	if _, err := c.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get = %v, want NodeClaimNotFoundError", err)
	}
	if got := listedIDs(t, c); len(got) != 0 {
		t.Errorf("List = %v, want none", got)
	}
	clk.Step(time.Minute)
	rc := kwok.NewRegistrationController(testEnv.Client, clk, c)
	if diff := cmp.Diff(reconcile.Result{}, reconcileClaim(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile (-want +got):\n%s", diff)
	}
	expectNoNode(t, claim.Name)
}

// TestRegistrationDelaySource checks which delay applies: the NodeClass's
// when it sets one (even 0s), else the provider's option.
func TestRegistrationDelaySource(t *testing.T) {
	cases := map[string]struct {
		option    time.Duration
		nodeClass *metav1.Duration
		want      time.Duration // 0: the Node is created at once
	}{
		"none":                     {},
		"provider option":          {option: 45 * time.Second, want: 45 * time.Second},
		"node class overrides":     {option: 45 * time.Second, nodeClass: &metav1.Duration{Duration: 10 * time.Second}, want: 10 * time.Second},
		"node class 0s means none": {option: 45 * time.Second, nodeClass: &metav1.Duration{}},
		"fractional seconds":       {nodeClass: &metav1.Duration{Duration: 1500 * time.Millisecond}, want: 1500 * time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := newProvider(t, kwok.Options{RegistrationDelay: tc.option})
			claim := newClaim(createNodeClass(t, tc.nodeClass).Name)
			created, err := c.Create(context.Background(), claim)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			got, booting := created.Labels[kwok.RegisterAfterLabelKey]
			if tc.want == 0 {
				if booting {
					t.Errorf("registration time %q, want none", got)
				}
				getNode(t, claim.Name)
				return
			}
			if want := registerAfter(tc.want); got != want {
				t.Errorf("registration time = %q, want %q", got, want)
			}
			expectNoNode(t, claim.Name)
		})
	}
}

// TestRegisterAfterLabelStaysOffNodes checks that the registration time, the
// provider's bookkeeping for a booting instance, never reaches a Node: the
// Node is created without it, and it leaves the claim once the Node exists,
// so the core's registration (which copies the claim's labels) cannot copy it.
func TestRegisterAfterLabelStaysOffNodes(t *testing.T) {
	ctx := context.Background()
	c, clk := newProvider(t, kwok.Options{})
	claim := newClaim(createNodeClass(t, &metav1.Duration{Duration: time.Minute}).Name, in(corev1.LabelInstanceTypeStable, "m5.large"))
	storeClaim(t, claim)
	created, err := c.Create(ctx, getClaim(t, claim.Name))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	persistLaunch(t, created)
	if _, ok := getClaim(t, claim.Name).Labels[kwok.RegisterAfterLabelKey]; !ok {
		t.Fatal("booting claim has no registration time")
	}
	clk.Step(time.Minute)
	rc := kwok.NewRegistrationController(testEnv.Client, clk, c)
	reconcileClaim(t, rc, claim.Name)
	if value, ok := getNode(t, claim.Name).Labels[kwok.RegisterAfterLabelKey]; ok {
		t.Errorf("node carries %s=%s", kwok.RegisterAfterLabelKey, value)
	}
	if value, ok := getClaim(t, claim.Name).Labels[kwok.RegisterAfterLabelKey]; ok {
		t.Errorf("claim of a registered instance still carries %s=%s", kwok.RegisterAfterLabelKey, value)
	}
	if _, err := c.Get(ctx, created.Status.ProviderID); err != nil {
		t.Errorf("Get of the registered instance: %v", err)
	}
}
