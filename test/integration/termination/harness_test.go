package termination_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/indexes"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// testLabel scopes the cluster-scoped objects of a test to its namespace.
const testLabel = "termination.dovetail.test/namespace"

// harness wires the termination controllers as the composition root does,
// with a cache-backed client (the controllers list through its indexes), a
// fake clock, the fake cloud provider and a recording event sink.
type harness struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	clock   *clocktesting.FakeClock
	cloud   *fake.CloudProvider
	events  *env.EventLog
	metrics *metrics.Metrics
	direct  client.Client // the test's own view, straight from the API server
	cached  client.Client // the controllers' view, as a manager's client
	queue   *eviction.Queue
	nodes   *termination.NodeController
	claims  *termination.NodeClaimController
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), testlog.Logger(t, 1)))
	var running sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	ns := testEnv.Namespace(t)
	nsObj := &corev1.Namespace{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatalf("getting namespace: %v", err)
	}

	informers, err := cache.New(testEnv.ControlPlane.RESTConfig, cache.Options{Scheme: testEnv.Scheme})
	if err != nil {
		t.Fatalf("creating cache: %v", err)
	}
	if err := indexes.Setup(ctx, informers); err != nil {
		t.Fatalf("indexing fields: %v", err)
	}
	running.Go(func() {
		if err := informers.Start(ctx); err != nil {
			t.Errorf("running cache: %v", err)
		}
	})
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	cached, err := client.New(testEnv.ControlPlane.RESTConfig, client.Options{Scheme: testEnv.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatalf("creating cached client: %v", err)
	}

	m, err := metrics.New(nil)
	if err != nil {
		t.Fatalf("creating metrics: %v", err)
	}
	h := &harness{
		t: t, ctx: ctx, ns: ns,
		// Server time, so that deletion timestamps and the clock agree.
		clock:   clocktesting.NewFakeClock(nsObj.CreationTimestamp.Time),
		cloud:   fake.NewCloudProvider(),
		events:  &env.EventLog{},
		metrics: m,
		direct:  testEnv.Client,
		cached:  cached,
	}
	h.cloud.InstanceTypes = fake.InstanceTypes(1)
	h.queue = eviction.NewQueue(h.clock, cached, h.events, m)
	running.Go(func() {
		if err := h.queue.Start(ctx); err != nil {
			t.Errorf("running eviction queue: %v", err)
		}
	})
	h.nodes = termination.NewNodeController(h.clock, cached, h.cloud, h.events, m, h.queue)
	h.claims = termination.NewNodeClaimController(h.clock, cached, h.cloud, h.events, m)
	t.Cleanup(h.removeClusterScoped)
	return h
}

// removeClusterScoped deletes the test's cluster-scoped objects, finalizers
// and all, so that a failed test leaves nothing behind for the next.
func (h *harness) removeClusterScoped() {
	ctx := context.Background()
	for _, list := range []client.ObjectList{&corev1.NodeList{}, &v1.NodeClaimList{}, &storagev1.VolumeAttachmentList{}, &corev1.PersistentVolumeList{}} {
		if err := h.direct.List(ctx, list, client.MatchingLabels{testLabel: h.ns}); err != nil {
			h.t.Errorf("listing leftovers: %v", err)
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if len(obj.GetFinalizers()) > 0 {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
				_ = h.direct.Patch(ctx, obj, patch)
			}
			_ = client.IgnoreNotFound(h.direct.Delete(ctx, obj))
			return nil
		})
	}
}

// expectEvent fails unless an event with the reason about the named object
// has a message containing want.
func (h *harness) expectEvent(reason, name, want string) {
	h.t.Helper()
	h.events.Expect(h.t, reason, name, want)
}

// --- writing objects ---

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.direct.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (h *harness) delete(obj client.Object, opts ...client.DeleteOption) {
	h.t.Helper()
	if err := h.direct.Delete(h.ctx, obj, opts...); err != nil {
		h.t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

// get reads the current state of obj from the API server into obj.
func (h *harness) get(obj client.Object) {
	h.t.Helper()
	env.Get(h.ctx, h.t, h.direct, obj)
}

func (h *harness) exists(obj client.Object) bool {
	h.t.Helper()
	return env.Exists(h.ctx, h.t, h.direct, obj)
}

// expectGone fails unless obj no longer exists.
func (h *harness) expectGone(obj client.Object) {
	h.t.Helper()
	if h.exists(obj) {
		h.t.Errorf("%T %s still exists", obj, obj.GetName())
	}
}

// launch creates the NodeClaim, launches its instance at the fake provider
// and records the provider ID in its status, as the lifecycle controller would.
func (h *harness) launch(nodeClaim *v1.NodeClaim) *v1.NodeClaim {
	h.t.Helper()
	h.create(nodeClaim)
	launched, err := h.cloud.Create(h.ctx, nodeClaim)
	if err != nil {
		h.t.Fatalf("launching %s: %v", nodeClaim.Name, err)
	}
	nodeClaim.Status.ProviderID = launched.Status.ProviderID
	if err := h.direct.Status().Update(h.ctx, nodeClaim); err != nil {
		h.t.Fatalf("recording provider ID of %s: %v", nodeClaim.Name, err)
	}
	return nodeClaim
}

// finish plays the kubelet: every terminating pod in the namespace is
// removed for good.
func (h *harness) finish() {
	h.t.Helper()
	for _, pod := range h.pods() {
		if pod.DeletionTimestamp != nil {
			h.delete(pod, client.GracePeriodSeconds(0))
		}
	}
}

func (h *harness) pods() []*corev1.Pod {
	h.t.Helper()
	list := &corev1.PodList{}
	if err := h.direct.List(h.ctx, list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatalf("listing pods: %v", err)
	}
	out := []*corev1.Pod{}
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// terminating returns the names of the namespace's terminating pods, sorted.
func (h *harness) terminating() []string {
	h.t.Helper()
	out := []string{}
	for _, pod := range h.pods() {
		if pod.DeletionTimestamp != nil {
			out = append(out, pod.Name)
		}
	}
	slices.Sort(out)
	return out
}

// markReady plays the kubelet: the pods are Running and Ready.
func (h *harness) markReady(pods ...*corev1.Pod) {
	h.t.Helper()
	for _, pod := range pods {
		h.get(pod)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.StartTime = &metav1.Time{Time: h.clock.Now()}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(h.clock.Now())}}
		if err := h.direct.Status().Update(h.ctx, pod); err != nil {
			h.t.Fatalf("marking pod %s ready: %v", pod.Name, err)
		}
	}
}

// syncPDB plays the disruption controller: it counts the Ready,
// non-terminating pods the PDB selects and writes its status.
func (h *harness) syncPDB(pdb *policyv1.PodDisruptionBudget) {
	h.t.Helper()
	h.get(pdb)
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		h.t.Fatalf("parsing selector: %v", err)
	}
	var expected, healthy int32
	for _, pod := range h.pods() {
		if !selector.Matches(labels.Set(pod.Labels)) || pod.DeletionTimestamp != nil {
			continue
		}
		if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
			continue
		}
		expected++
		if slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			healthy++
		}
	}
	desired := pdb.Spec.MinAvailable.IntVal
	pdb.Status.ObservedGeneration = pdb.Generation
	pdb.Status.ExpectedPods, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy = expected, healthy, desired
	pdb.Status.DisruptionsAllowed = max(0, healthy-desired)
	if err := h.direct.Status().Update(h.ctx, pdb); err != nil {
		h.t.Fatalf("writing PDB status: %v", err)
	}
}

// --- reconciling ---

// settle waits until the controllers' cache has caught up with the API
// server on every object of the test, so that a reconcile sees what the test
// just wrote.
func (h *harness) settle() {
	h.t.Helper()
	scoped := client.MatchingLabels{testLabel: h.ns}
	lists := []struct {
		list client.ObjectList
		opts []client.ListOption
	}{
		{&corev1.PodList{}, []client.ListOption{client.InNamespace(h.ns)}},
		{&corev1.PersistentVolumeClaimList{}, []client.ListOption{client.InNamespace(h.ns)}},
		{&corev1.NodeList{}, []client.ListOption{scoped}},
		{&v1.NodeClaimList{}, []client.ListOption{scoped}},
		{&storagev1.VolumeAttachmentList{}, []client.ListOption{scoped}},
	}
	h.eventually("the cache to catch up", func() (bool, error) {
		for _, l := range lists {
			want, err := env.ResourceVersions(h.ctx, h.direct, l.list, l.opts...)
			if err != nil {
				return false, err
			}
			got, err := env.ResourceVersions(h.ctx, h.cached, l.list, l.opts...)
			if err != nil {
				return false, err
			}
			if !maps.Equal(want, got) {
				return false, nil
			}
		}
		return true, nil
	})
}

// reconcileNode settles the cache and reconciles the Node once, failing the
// test on an error. A Node that is gone reconciles to nothing.
func (h *harness) reconcileNode(node *corev1.Node) reconcile.Result {
	h.t.Helper()
	h.settle()
	fresh := &corev1.Node{}
	if err := h.direct.Get(h.ctx, client.ObjectKeyFromObject(node), fresh); apierrors.IsNotFound(err) {
		return reconcile.Result{}
	} else if err != nil {
		h.t.Fatalf("getting node: %v", err)
	}
	result, err := h.nodes.Reconcile(h.ctx, fresh)
	if err != nil {
		h.t.Fatalf("reconciling node %s: %v", node.Name, err)
	}
	return result
}

// reconcileNodeClaim is reconcileNode for a NodeClaim.
func (h *harness) reconcileNodeClaim(nodeClaim *v1.NodeClaim) reconcile.Result {
	h.t.Helper()
	h.settle()
	fresh := &v1.NodeClaim{}
	if err := h.direct.Get(h.ctx, client.ObjectKeyFromObject(nodeClaim), fresh); apierrors.IsNotFound(err) {
		return reconcile.Result{}
	} else if err != nil {
		h.t.Fatalf("getting nodeclaim: %v", err)
	}
	result, err := h.claims.Reconcile(h.ctx, fresh)
	if err != nil {
		h.t.Fatalf("reconciling nodeclaim %s: %v", nodeClaim.Name, err)
	}
	return result
}

// reconcileUntilGone reconciles the Node and then the NodeClaim until both
// are gone, stepping the clock over the instance rechecks.
func (h *harness) reconcileUntilGone(node *corev1.Node, nodeClaim *v1.NodeClaim) {
	h.t.Helper()
	for range 10 {
		if !h.exists(node) && !h.exists(nodeClaim) {
			return
		}
		h.reconcileNode(node)
		h.reconcileNodeClaim(nodeClaim)
		h.clock.Step(5 * time.Second)
	}
	h.t.Fatalf("node %s or nodeclaim %s still exists after 10 rounds", node.Name, nodeClaim.Name)
}

// eventually polls condition for up to 30 s, failing the test with what
// was awaited when the deadline passes.
func (h *harness) eventually(what string, condition func() (bool, error)) {
	h.t.Helper()
	env.Eventually(h.t, 30*time.Second, what, func(context.Context) (bool, error) { return condition() })
}

// expectTerminating waits until exactly the named pods of the namespace are
// terminating (the eviction queue works in the background).
func (h *harness) expectTerminating(names ...string) {
	h.t.Helper()
	want := slices.Sorted(slices.Values(names))
	if want == nil {
		want = []string{}
	}
	var got []string
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		got = h.terminating()
		return slices.Equal(want, got), nil
	}); err != nil {
		h.t.Fatalf("waiting for terminating pods %v: %v; terminating: %v", want, err, got)
	}
}

// expectCondition fails unless the NodeClaim has the condition with the
// status and reason, and a message containing message.
func (h *harness) expectCondition(nodeClaim *v1.NodeClaim, condType string, status metav1.ConditionStatus, reason, message string) {
	h.t.Helper()
	fresh := nodeClaim.DeepCopy()
	h.get(fresh)
	cond := meta.FindStatusCondition(fresh.Status.Conditions, condType)
	if cond == nil {
		h.t.Errorf("nodeclaim %s has no %s condition; conditions: %+v", nodeClaim.Name, condType, fresh.Status.Conditions)
		return
	}
	if cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, message) {
		h.t.Errorf("nodeclaim %s condition %s = %s/%s %q, want %s/%s containing %q",
			nodeClaim.Name, condType, cond.Status, cond.Reason, cond.Message, status, reason, message)
	}
}
