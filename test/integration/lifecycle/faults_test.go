package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestLaunchThatKeepsFailingIsDeletedByLiveness checks that every phase runs
// on every pass: a claim whose Create fails with an error that is retried
// (not insufficient capacity) still reaches liveness, which deletes it once
// the launch timeout has passed, instead of holding room forever.
func TestLaunchThatKeepsFailingIsDeletedByLiveness(t *testing.T) {
	cases := map[string]struct {
		name string
		err  error
	}{
		"create error": {name: "create-error", err: cloudprovider.NewCreateError(errors.New("boom"), "SubnetsNotFound", "no subnet in zone")},
		"other error":  {name: "other", err: errors.New("api throttled")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			nc := newClaim(t, "lifecycle-keeps-failing-"+tc.name)
			// The claim is created after the fake clock started: time the
			// passes from its creation, as liveness does.
			deadline := nc.CreationTimestamp.Add(lifecycle.DefaultOptions().LaunchTimeout)
			got := nc
			for _, at := range []time.Time{deadline.Add(-4 * time.Minute), deadline.Add(-time.Second), deadline.Add(time.Second)} {
				h.clock.SetTime(at)
				h.provider.Lock()
				h.provider.NextCreateErr = tc.err
				h.provider.Unlock()
				var err error
				got, err = h.reconcile(t, got)
				if err == nil && at.Before(deadline) {
					t.Errorf("at %s: Reconcile returned no error for a failing launch", at.Sub(deadline))
				}
				if beforeDeadline := at.Before(deadline); beforeDeadline != (got.DeletionTimestamp == nil) {
					t.Fatalf("at %s from the launch deadline: deleted = %v, want %v (reconcile: %v)", at.Sub(deadline), got.DeletionTimestamp != nil, !beforeDeadline, err)
				}
			}
		})
	}
}

// TestFailedDeletionIsRetried checks that when a phase deletes the claim and
// the deletion fails, Reconcile returns the error (so the claim is requeued
// with backoff) instead of dropping it.
func TestFailedDeletionIsRetried(t *testing.T) {
	deleteErr := errors.New("injected: apiserver unavailable")
	h := newHarnessWithClient(t, func(c client.Client) client.Client {
		return env.Intercept(c, interceptor.Funcs{
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if _, ok := obj.(*v1.NodeClaim); ok {
					return deleteErr
				}
				return c.Delete(ctx, obj, opts...)
			},
		})
	})
	h.provider.NextCreateErr = cloudprovider.NewInsufficientCapacityError(errors.New("no capacity"))
	nc := newClaim(t, "lifecycle-delete-fails")
	got, err := h.reconcile(t, nc)
	if !errors.Is(err, deleteErr) {
		t.Fatalf("Reconcile returned %v, want the deletion's error %q", err, deleteErr)
	}
	if got.DeletionTimestamp != nil {
		t.Fatal("claim deleted although the deletion failed")
	}
}

// TestStatusWriteKeepsOtherWritersConditions checks that the lifecycle's
// status write does not erase a condition another controller (disruption's
// Drifted, Consolidatable, DisruptionReason) wrote after the lifecycle read
// the claim: the write is refused and retried on the newer claim.
func TestStatusWriteKeepsOtherWritersConditions(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	nc := newClaim(t, "lifecycle-other-writer")
	launched, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	node := registerNode(t, launched, "lifecycle-other-writer-node")
	h.seen(t, node)

	// The lifecycle read the claim (stale); another writer marks it drifted.
	stale := launched.DeepCopy()
	drifted := launched.DeepCopy()
	meta.SetStatusCondition(&drifted.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.Now(),
	})
	if err := testEnv.Client.Status().Update(ctx, drifted); err != nil {
		t.Fatalf("marking the claim drifted: %v", err)
	}

	// The lifecycle registers the node from its stale read.
	result, err := h.controller.Reconcile(ctx, stale)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	got := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if c := condition(got, v1.ConditionTypeDrifted); c.Status != metav1.ConditionTrue {
		t.Fatalf("Drifted = %+v after the lifecycle's write from a stale read, want True", c)
	}
	if result.RequeueAfter == 0 {
		t.Error("a refused status write is not requeued")
	}

	// The retry, on the newer claim, registers it and keeps Drifted.
	if got, err = h.reconcile(t, got); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue {
		t.Errorf("Registered = %+v after the retry, want True", c)
	}
	if c := condition(got, v1.ConditionTypeDrifted); c.Status != metav1.ConditionTrue {
		t.Errorf("Drifted = %+v after the retry, want True", c)
	}
}

// TestRegistrationSurvivesAConcurrentNodeWrite checks that registration
// succeeds on the first try when another writer (the kubelet, kwok, the
// node-lifecycle controller) changes the Node between the lifecycle's read
// and its patch, and that the other writer's taint and label survive.
func TestRegistrationSurvivesAConcurrentNodeWrite(t *testing.T) {
	ctx := context.Background()
	var nodeName string
	concurrentWrite := func() error {
		node := &corev1.Node{}
		if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return fmt.Errorf("reading node: %w", err)
		}
		node.Labels["example.com/written-by"] = "kubelet"
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "example.com/concurrent", Effect: corev1.TaintEffectNoSchedule})
		if err := testEnv.Client.Update(ctx, node); err != nil {
			return fmt.Errorf("updating node: %w", err)
		}
		return nil
	}
	written := false
	h := newHarnessWithClient(t, func(c client.Client) client.Client {
		return env.Intercept(c, interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				if _, ok := list.(*corev1.NodeList); ok && nodeName != "" && !written {
					written = true
					return concurrentWrite()
				}
				return nil
			},
		})
	})
	nc := newClaim(t, "lifecycle-concurrent-node")
	launched, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	node := registerNode(t, launched, "lifecycle-concurrent-node-node")
	h.seen(t, node)
	nodeName = node.Name

	got, err := h.reconcile(t, launched)
	if err != nil {
		t.Fatalf("registration with a concurrent node write failed: %v", err)
	}
	if !written {
		t.Fatal("the concurrent write did not happen")
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue {
		t.Fatalf("Registered = %+v, want True on the first try", c)
	}
	stored := &corev1.Node{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), stored); err != nil {
		t.Fatal(err)
	}
	has := func(key string) bool {
		return slices.ContainsFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	}
	if !has("example.com/concurrent") || !has("dedicated") || !has("example.com/cni-not-ready") || has(v1.UnregisteredTaintKey) {
		t.Errorf("node taints %v: want the concurrent, claim and startup taints and not the unregistered one", stored.Spec.Taints)
	}
	if stored.Labels["example.com/written-by"] != "kubelet" || stored.Labels[v1.NodeRegisteredLabelKey] != "true" || stored.Labels["team"] != "ml" {
		t.Errorf("node labels %v lack the concurrent or the claim's labels", stored.Labels)
	}
	if !controllerutil.ContainsFinalizer(stored, v1.TerminationFinalizer) || len(stored.OwnerReferences) != 1 || stored.OwnerReferences[0].UID != got.UID {
		t.Errorf("node finalizers %v owners %v", stored.Finalizers, stored.OwnerReferences)
	}
}

// TestLaunchIsLoggedOnce checks that a reconcile of a stale claim (the cache
// has not yet delivered the launch's status write, or that write conflicted
// and the claim is retried) does not launch again: Create is called, and
// "Launched NodeClaim" logged, once per claim.
func TestLaunchIsLoggedOnce(t *testing.T) {
	var mu sync.Mutex
	launchedLogs := 0
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"msg"="Launched NodeClaim"`) {
			mu.Lock()
			launchedLogs++
			mu.Unlock()
		}
	}, funcr.Options{})
	ctx := log.IntoContext(context.Background(), logger)
	h := newHarness(t)
	nc := newClaim(t, "lifecycle-launch-once")
	// The claim as the cache may hold it before the launch's writes arrive.
	stale := nc.DeepCopy()
	controllerutil.AddFinalizer(stale, v1.TerminationFinalizer)
	if err := testEnv.Client.Update(ctx, stale); err != nil {
		t.Fatal(err)
	}
	for i, read := range []*v1.NodeClaim{stale.DeepCopy(), stale.DeepCopy()} {
		if _, err := h.controller.Reconcile(ctx, read); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	got := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if c := condition(got, v1.ConditionTypeLaunched); c.Status != metav1.ConditionTrue {
		t.Fatalf("Launched = %+v, want True", c)
	}
	h.provider.Lock()
	creates := len(h.provider.CreateCalls)
	h.provider.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if creates != 1 || launchedLogs != 1 {
		t.Errorf("Create called %d times and \"Launched NodeClaim\" logged %d times, want once each", creates, launchedLogs)
	}
}

// TestClaimDeletedForInsufficientCapacityIsNotLaunchedFromAStaleCopy: a
// claim deleted because no offering could be launched must not be launched
// by a later reconcile of a copy read before the deletion (the cache can lag
// the delete), which would leave an instance running for a claim that is
// gone while the provisioner makes a new claim for the same pods.
func TestClaimDeletedForInsufficientCapacityIsNotLaunchedFromAStaleCopy(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	nc := newClaim(t, "lifecycle-ice-stale")
	stale := nc.DeepCopy()
	controllerutil.AddFinalizer(stale, v1.TerminationFinalizer)
	if err := testEnv.Client.Update(ctx, stale); err != nil {
		t.Fatal(err)
	}
	h.provider.Lock()
	h.provider.NextCreateErr = cloudprovider.NewInsufficientCapacityError(errors.New("no spot capacity"))
	h.provider.Unlock()
	// The first reconcile fails for capacity and deletes the claim; the
	// second reads the same, older copy, as a lagging cache would hand it.
	for i, read := range []*v1.NodeClaim{stale.DeepCopy(), stale.DeepCopy()} {
		_, _ = h.controller.Reconcile(ctx, read)
		if i == 0 {
			got := &v1.NodeClaim{}
			if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || got.DeletionTimestamp == nil {
				t.Fatalf("after insufficient capacity the claim is %+v (%v), want it being deleted", got.ObjectMeta, err)
			}
		}
	}
	h.provider.Lock()
	defer h.provider.Unlock()
	if n := len(h.provider.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times, want once: the stale copy of a deleted claim was launched", n)
	}
}

// TestClaimDeletedBeforeItsLaunchIsNotLaunched: a claim created with its
// finalizer (as Dovetail creates them) and deleted before its first
// reconcile is let go at once by termination (it has no instance). A
// reconcile of the copy read before the deletion, as a lagging cache hands
// it, must not launch an instance that no claim would own; the finalizer
// patch that once came before every launch no longer stands in the way.
// The same holds for a claim deleted and created again under its name.
func TestClaimDeletedBeforeItsLaunchIsNotLaunched(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	for _, recreate := range []bool{false, true} {
		nc := newClaim(t, fmt.Sprintf("lifecycle-deleted-unlaunched-%v", recreate))
		stale := nc.DeepCopy()
		controllerutil.AddFinalizer(stale, v1.TerminationFinalizer)
		if err := testEnv.Client.Update(ctx, stale); err != nil {
			t.Fatal(err)
		}
		// Deleted, and let go as termination lets go a claim with no instance.
		if err := testEnv.Client.Delete(ctx, nc); err != nil {
			t.Fatal(err)
		}
		gone := &v1.NodeClaim{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), gone); err != nil {
			t.Fatal(err)
		}
		gone.Finalizers = nil
		if err := testEnv.Client.Update(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if recreate {
			newClaim(t, nc.Name)
		}
		if _, err := h.controller.Reconcile(ctx, stale.DeepCopy()); err != nil {
			t.Fatalf("reconciling the stale copy (recreated %v): %v", recreate, err)
		}
		h.provider.Lock()
		calls := len(h.provider.CreateCalls)
		h.provider.Unlock()
		if calls != 0 {
			t.Fatalf("Create called %d times for the stale copy of a deleted claim (recreated under its name: %v)", calls, recreate)
		}
	}
}

// TestRegistrationIsCountedOnce: a pass whose status write conflicts (here
// a second pass from the same, older copy of the claim, as a lagging cache
// hands it) runs registration again, and must not count or log it again:
// in a busy scale-out each claim was counted three or four times in
// karpenter_nodeclaims_registered_total and karpenter_nodes_created_total.
func TestRegistrationIsCountedOnce(t *testing.T) {
	var mu sync.Mutex
	registeredLogs := 0
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"msg"="Registered NodeClaim"`) {
			mu.Lock()
			registeredLogs++
			mu.Unlock()
		}
	}, funcr.Options{})
	ctx := log.IntoContext(context.Background(), logger)
	h := newHarness(t)
	nc := newClaim(t, "lifecycle-registered-once")
	launched, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	node := registerNode(t, launched, "lifecycle-registered-once-node")
	h.seen(t, node)
	for i, read := range []*v1.NodeClaim{launched.DeepCopy(), launched.DeepCopy()} {
		if _, err := h.controller.Reconcile(ctx, read); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	got := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue {
		t.Fatalf("Registered = %+v, want True", c)
	}
	registered := testutil.ToFloat64(h.metrics.NodeClaimsRegistered.WithLabelValues("default"))
	created := testutil.ToFloat64(h.metrics.NodesCreated.WithLabelValues("default"))
	mu.Lock()
	defer mu.Unlock()
	if registered != 1 || created != 1 || registeredLogs != 1 {
		t.Errorf("registration counted %v times (nodes created %v) and logged %d times, want once each", registered, created, registeredLogs)
	}
}

// TestRegistrationReadsAStaleNodeAgain: when the cached Node is older than
// the API server's (the node-lifecycle controller removed its not-ready
// taint, ahead of the unregistered one, after the cache's copy), the
// registration patch's removal by index is refused; registration reads the
// Node from the API server and succeeds in the same pass instead of failing
// and backing off while the node's pods wait.
func TestRegistrationReadsAStaleNodeAgain(t *testing.T) {
	ctx := context.Background()
	var stale *corev1.Node
	h := newHarnessWithClient(t, func(c client.Client) client.Client {
		return env.Intercept(c, interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if nodes, ok := list.(*corev1.NodeList); ok && stale != nil {
					nodes.Items = []corev1.Node{*stale.DeepCopy()}
					return nil
				}
				return c.List(ctx, list, opts...)
			},
		})
	})
	nc := newClaim(t, "lifecycle-stale-node")
	launched, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	node := registerNode(t, launched, "lifecycle-stale-node-node")
	// The API server added not-ready at creation; put it first, where the
	// kubelet's own list puts it.
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	others := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	node.Spec.Taints = append([]corev1.Taint{notReady}, others...)
	if err := testEnv.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	stale = node.DeepCopy()
	// The node-lifecycle controller removes not-ready; the cache still
	// shows it.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if err := testEnv.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}

	got, err := h.reconcile(t, launched)
	if err != nil {
		t.Fatalf("registration from a stale Node failed: %v", err)
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue {
		t.Fatalf("Registered = %+v, want True in the same pass", c)
	}
	stored := &corev1.Node{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), stored); err != nil {
		t.Fatal(err)
	}
	has := func(key string) bool {
		return slices.ContainsFunc(stored.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	}
	if has(v1.UnregisteredTaintKey) || has(corev1.TaintNodeNotReady) || !has("dedicated") || !has("example.com/cni-not-ready") {
		t.Errorf("node taints %v: want the claim's and the startup taint, and neither unregistered nor not-ready", stored.Spec.Taints)
	}
	if stored.Labels[v1.NodeRegisteredLabelKey] != "true" {
		t.Errorf("node labels %v lack %s", stored.Labels, v1.NodeRegisteredLabelKey)
	}
}

// TestStaleCopyCostsNoWrite: a reconcile that reads a claim older than
// the controller's own last write to it (the cache has not delivered the
// write yet) is skipped. Before, it ran every phase again: it re-registered
// the Node and ended in a conflicting status write, and in a 1,000-pod
// scale-out half of the passes did that, registering each claim about five
// times and delaying registration by seconds.
func TestStaleCopyCostsNoWrite(t *testing.T) {
	var mu sync.Mutex
	writes := 0
	count := func() {
		mu.Lock()
		writes++
		mu.Unlock()
	}
	h := newHarnessWithClient(t, func(c client.Client) client.Client {
		return env.Intercept(c, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				count()
				return c.Patch(ctx, obj, patch, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				count()
				return c.Update(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				count()
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		})
	})
	ctx := context.Background()
	nc := newClaim(t, "lifecycle-stale-copy")
	launched, err := h.reconcile(t, nc)
	if err != nil {
		t.Fatal(err)
	}
	node := registerNode(t, launched, "lifecycle-stale-copy-node")
	h.seen(t, node)

	// One pass registers the Node and writes the claim's status.
	read := launched.DeepCopy()
	if _, err := h.controller.Reconcile(ctx, read.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	registered := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), registered); err != nil {
		t.Fatal(err)
	}
	if c := condition(registered, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue {
		t.Fatalf("Registered = %+v after the first pass, want True", c)
	}
	mu.Lock()
	writes = 0
	mu.Unlock()

	// A pass on the copy that write replaced writes nothing and comes back.
	result, err := h.controller.Reconcile(ctx, read.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	stale := writes
	mu.Unlock()
	if stale != 0 || result.RequeueAfter <= 0 {
		t.Errorf("a pass on the superseded copy made %d writes and returned %+v, want none and a requeue", stale, result)
	}

	// The newer copy is reconciled as usual.
	if _, err := h.controller.Reconcile(ctx, registered.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if c := condition(got, v1.ConditionTypeRegistered); c.Status != metav1.ConditionTrue {
		t.Errorf("Registered = %+v after the pass on the newer copy, want True", c)
	}
}
