package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

type harness struct {
	cache      client.Client
	clock      *clocktesting.FakeClock
	provider   *fake.CloudProvider
	controller *lifecycle.Controller
	recorder   *record.FakeRecorder
	metrics    *metrics.Metrics
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWithClient(t, nil)
}

// recordingNominator records, for each registration that hands its plan
// over, the node and whether the API server still showed it tainted
// unregistered at that moment.
type recordingNominator struct {
	calls []string
}

func (r *recordingNominator) NominatePlanned(ctx context.Context, node *corev1.Node, claim string) {
	stored := &corev1.Node{}
	tainted := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), stored) == nil &&
		slices.ContainsFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey })
	r.calls = append(r.calls, fmt.Sprintf("%s/%s tainted=%v", claim, node.Name, tainted))
}

// newHarnessWithClient builds the harness with, if wrap is not nil, the
// controller's client wrapped by it (to inject faults or concurrent writes,
// e.g. with controller-runtime's interceptor).
func newHarnessWithClient(t *testing.T, wrap func(client.Client) client.Client) *harness {
	t.Helper()
	return newHarnessWithNominator(t, wrap, nil)
}

// newHarnessWithNominator builds the harness with registration handing
// plans to nominator.
func newHarnessWithNominator(t *testing.T, wrap func(client.Client) client.Client, nominator lifecycle.Nominator) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	cp := fake.NewCloudProvider()
	cp.InstanceTypes = []*cloudprovider.InstanceType{
		dtesting.MakeInstanceType("gpu-1x").CPU("4").Memory("16Gi").Pods("50").Resource("nvidia.com/gpu", "1").Obj(),
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	// The controller reads through a cache with Dovetail's field indexes, as in production.
	cached := testEnv.StartManager(t, func(manager.Manager) error { return nil }).GetClient()
	controllerClient := cached
	if wrap != nil {
		controllerClient = wrap(cached)
	}
	return &harness{cache: cached, clock: clk, provider: cp, recorder: rec, metrics: m,
		controller: lifecycle.NewController(clk, controllerClient, testEnv.Client, cp, events.NewRecorder(rec, clk), m, nominator, lifecycle.DefaultOptions())}
}

// seen waits until the controller's cache holds obj at least as new as stored.
func (h *harness) seen(t *testing.T, obj client.Object) {
	t.Helper()
	env.Eventually(t, 30*time.Second, "the cache to see "+env.Describe(obj), func(ctx context.Context) (bool, error) {
		got := obj.DeepCopyObject().(client.Object)
		if err := h.cache.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return got.GetResourceVersion() == obj.GetResourceVersion(), nil
	})
}

// newClaim creates a NodeClaim requesting a GPU, with a startup taint.
func newClaim(t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default", "team": "ml"}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
				NodeClassRef:  &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
				Requirements:  []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-1x"}}},
				Taints:        []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}},
				StartupTaints: []corev1.Taint{{Key: "example.com/cni-not-ready", Effect: corev1.TaintEffectNoSchedule}},
				ExpireAfter:   v1.MustParseNillableDuration("720h"),
			},
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		},
	}
	if err := testEnv.Client.Create(context.Background(), nc); err != nil {
		t.Fatalf("creating nodeclaim: %v", err)
	}
	t.Cleanup(func() {
		got := &v1.NodeClaim{}
		if testEnv.Client.Get(context.Background(), client.ObjectKeyFromObject(nc), got) == nil {
			got.Finalizers = nil
			_ = testEnv.Client.Update(context.Background(), got)
			_ = testEnv.Client.Delete(context.Background(), got)
		}
	})
	return nc
}

// reconcile reads the claim, reconciles it and returns the stored result.
func (h *harness) reconcile(t *testing.T, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	t.Helper()
	ctx := context.Background()
	got := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatalf("reading nodeclaim: %v", err)
	}
	_, err := h.controller.Reconcile(ctx, got)
	out := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), out); err != nil {
		t.Fatalf("reading nodeclaim: %v", err)
	}
	return out, err
}

func condition(nc *v1.NodeClaim, t string) metav1.Condition {
	if c := meta.FindStatusCondition(nc.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: "absent"}
}

// registerNode creates the Node a kubelet would register for the claim.
func registerNode(t *testing.T, nc *v1.NodeClaim, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{
			v1.UnregisteredNoExecuteTaint(), {Key: "example.com/cni-not-ready", Effect: corev1.TaintEffectNoSchedule},
		}},
	}
	if err := testEnv.Client.Create(context.Background(), node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() {
		got := &corev1.Node{}
		if testEnv.Client.Get(context.Background(), client.ObjectKeyFromObject(node), got) == nil {
			got.Finalizers = nil
			_ = testEnv.Client.Update(context.Background(), got)
			_ = testEnv.Client.Delete(context.Background(), got)
		}
	})
	return node
}

func TestLaunchRegisterInitialize(t *testing.T) {
	h := newHarness(t)
	nc := newClaim(t, "lifecycle-happy")

	// Launch.
	got, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !controllerutil.ContainsFinalizer(got, v1.TerminationFinalizer) {
		t.Error("finalizer missing after launch")
	}
	if c := condition(got, v1.ConditionTypeLaunched); c.Status != metav1.ConditionTrue {
		t.Fatalf("Launched = %+v, want True", c)
	}
	if got.Status.ProviderID == "" || got.Status.Allocatable.Cpu().IsZero() || got.Labels[corev1.LabelInstanceTypeStable] != "gpu-1x" {
		t.Errorf("launch not recorded: providerID %q allocatable %v labels %v", got.Status.ProviderID, got.Status.Allocatable, got.Labels)
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Reason != "NodeNotFound" {
		t.Errorf("Registered = %+v, want reason NodeNotFound", c)
	}
	if c := condition(got, v1.ConditionTypeReady); c.Status == metav1.ConditionTrue {
		t.Error("Ready before registration")
	}

	// Registration.
	node := registerNode(t, got, "lifecycle-happy-node")
	h.seen(t, node)
	got, err = h.reconcile(t, got)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue || got.Status.NodeName != node.Name {
		t.Fatalf("Registered = %+v nodeName %q", c, got.Status.NodeName)
	}
	stored := &corev1.Node{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKeyFromObject(node), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Labels[v1.NodeRegisteredLabelKey] != "true" || stored.Labels["team"] != "ml" || stored.Labels[v1.NodePoolLabelKey] != "default" {
		t.Errorf("node labels %v lack registered/team/nodepool", stored.Labels)
	}
	if slices.ContainsFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey }) {
		t.Error("unregistered taint still on the node")
	}
	if !slices.ContainsFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "dedicated" }) {
		t.Error("claim taint not copied to the node")
	}
	if !controllerutil.ContainsFinalizer(stored, v1.TerminationFinalizer) || len(stored.OwnerReferences) != 1 {
		t.Errorf("node finalizers %v owners %v", stored.Finalizers, stored.OwnerReferences)
	}
	if c := condition(got, v1.ConditionTypeInitialized); c.Reason != "NodeNotReady" {
		t.Errorf("Initialized = %+v, want reason NodeNotReady", c)
	}

	// Initialization waits for readiness, startup and ephemeral taints and the GPU.
	stored.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := testEnv.Client.Status().Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	h.seen(t, stored)
	got, _ = h.reconcile(t, got)
	if c := condition(got, v1.ConditionTypeInitialized); c.Reason != "StartupTaintsExist" {
		t.Errorf("Initialized = %+v, want reason StartupTaintsExist", c)
	}
	// The node-lifecycle controller removes not-ready (which the node
	// registered with) some time after Ready; until then pods cannot land,
	// so the node is not initialized.
	if !slices.ContainsFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
		t.Fatalf("test node registered without the not-ready taint: %v", stored.Spec.Taints)
	}
	stored.Spec.Taints = slices.DeleteFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "example.com/cni-not-ready" })
	if err := testEnv.Client.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	h.seen(t, stored)
	got, _ = h.reconcile(t, got)
	if c := condition(got, v1.ConditionTypeInitialized); c.Reason != "KnownEphemeralTaintsExist" {
		t.Errorf("Initialized = %+v, want reason KnownEphemeralTaintsExist", c)
	}
	stored.Spec.Taints = slices.DeleteFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if err := testEnv.Client.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	h.seen(t, stored)
	got, _ = h.reconcile(t, got)
	if c := condition(got, v1.ConditionTypeInitialized); c.Reason != "ResourceNotRegistered" {
		t.Errorf("Initialized = %+v, want reason ResourceNotRegistered", c)
	}
	stored.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	stored.Status.Capacity = stored.Status.Allocatable
	if err := testEnv.Client.Status().Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	h.seen(t, stored)
	got, _ = h.reconcile(t, got)
	if c := condition(got, v1.ConditionTypeInitialized); c.Status != metav1.ConditionTrue {
		t.Fatalf("Initialized = %+v, want True", c)
	}
	if c := condition(got, v1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", c)
	}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKeyFromObject(node), stored); err != nil || stored.Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Errorf("node not labelled initialized: %v %v", stored.Labels, err)
	}
	if n := len(h.provider.CreateCalls); n != 1 {
		t.Errorf("Create called %d times, want once", n)
	}
}

func TestLaunchFailures(t *testing.T) {
	cases := map[string]struct {
		name        string
		err         error
		wantDeleted bool
		wantReason  string
	}{
		"insufficient capacity deletes the claim": {name: "ice", err: cloudprovider.NewInsufficientCapacityError(errors.New("no capacity")), wantDeleted: true},
		"node class not ready deletes the claim":  {name: "nodeclass", err: cloudprovider.NewNodeClassNotReadyError(errors.New("not ready")), wantDeleted: true},
		"create error says why":                   {name: "create-error", err: cloudprovider.NewCreateError(errors.New("boom"), "SubnetsNotFound", "no subnet in zone"), wantReason: "SubnetsNotFound"},
		"other errors are retried":                {name: "other", err: errors.New("api throttled"), wantReason: "LaunchFailed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.provider.NextCreateErr = tc.err
			nc := newClaim(t, "lifecycle-fail-"+tc.name)
			got, err := h.reconcile(t, nc)
			if tc.wantDeleted {
				if got.DeletionTimestamp == nil {
					t.Errorf("claim not deleted after %v", tc.err)
				}
				return
			}
			if err == nil {
				t.Error("Reconcile returned no error; want a retry")
			}
			if c := condition(got, v1.ConditionTypeLaunched); c.Status != metav1.ConditionUnknown || c.Reason != tc.wantReason {
				t.Errorf("Launched = %+v, want Unknown/%s", c, tc.wantReason)
			}
			if got.DeletionTimestamp != nil {
				t.Error("claim deleted on a retryable error")
			}
		})
	}
}

func TestRegistrationTimeoutDeletesClaim(t *testing.T) {
	h := newHarness(t)
	nc := newClaim(t, "lifecycle-timeout")
	got, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Step(14 * time.Minute)
	if got, _ = h.reconcile(t, got); got.DeletionTimestamp != nil {
		t.Fatal("claim deleted before the registration timeout")
	}
	h.clock.Step(2 * time.Minute)
	if got, _ = h.reconcile(t, got); got.DeletionTimestamp == nil {
		t.Fatal("claim kept after the 15-minute registration timeout")
	}
}

// TestRegistrationHandsThePlanOverFirst: registration nominates the pods
// planned onto a node while the node still carries the unregistered taint
// (so they hold its room when the scheduler first sees it schedulable), and
// only at the first registration.
func TestRegistrationHandsThePlanOverFirst(t *testing.T) {
	nominator := &recordingNominator{}
	h := newHarnessWithNominator(t, nil, nominator)
	nc := newClaim(t, "lifecycle-handover")
	got, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	node := registerNode(t, got, "lifecycle-handover-node")
	h.seen(t, node)
	if got, err = h.reconcile(t, got); err != nil {
		t.Fatal(err)
	}
	if _, err = h.reconcile(t, got); err != nil {
		t.Fatal(err)
	}
	want := []string{"lifecycle-handover/lifecycle-handover-node tainted=true"}
	if !slices.Equal(nominator.calls, want) {
		t.Errorf("nominations %v, want %v", nominator.calls, want)
	}
}
