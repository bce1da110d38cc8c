package repair_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// harness is one NodePool of kwok nodes, wired as the composition root
// wires node repair: the node.health controller and the disruption loop and
// queue sharing one set of repair requests, a cluster-state model fed by
// the real informers, the termination finalizers, the manager's cached
// client and a fake clock. Tests call Reconcile themselves.
type harness struct {
	t        *testing.T
	ctx      context.Context
	ns       string
	clock    *clocktesting.FakeClock
	cloud    *kwok.CloudProvider
	events   *env.EventLog
	metrics  *metrics.Metrics
	cluster  *state.Cluster
	cached   client.Client
	pool     *v1.NodePool
	class    string
	requests *health.Requests
	repair   *health.Controller
	loop     *disrupter.Controller
	queue    *disrupter.Queue
	opts     disrupter.Options
	claims   *termination.NodeClaimController
	nodes    *termination.NodeController
	ready    map[string]time.Time // node -> when it turned NotReady (zero: Ready)
	nodeName []string
}

// newHarness removes what earlier tests left and starts a manager whose
// informers feed a fresh model. opts tune the disruption loop.
func newHarness(t *testing.T, mutate func(*disrupter.Options)) *harness {
	t.Helper()
	testEnv.RemoveClusterScoped(t)
	ctx := log.IntoContext(context.Background(), testlog.Logger(t, 1))
	// Seconds: condition times are stored with second precision.
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cloud, err := kwok.New(testEnv.Client, clk, kwok.Options{Partition: "t-" + rand.String(8)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, ns: testEnv.Namespace(t), clock: clk, cloud: cloud, events: &env.EventLog{}, metrics: m,
		ready: map[string]time.Time{}, cluster: state.NewCluster(clk).WithAPIReader(testEnv.Client), requests: health.NewRequests()}
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(h.cluster) {
			if err := c.Register(ctx, mgr); err != nil {
				return err
			}
		}
		return nil
	})
	h.cached = mgr.GetClient()
	opts := disrupter.DefaultOptions()
	opts.Repairs = h.requests
	if mutate != nil {
		mutate(&opts)
	}
	h.repair = health.NewController(clk, h.cached, cloud, h.events, h.requests)
	h.opts = opts
	h.loop, h.queue = disrupter.NewController(clk, h.cached, h.cluster, cloud, h.events, m, opts)
	h.claims = termination.NewNodeClaimController(clk, h.cached, cloud, h.events, m)
	h.nodes = termination.NewNodeController(clk, h.cached, cloud, h.events, m, eviction.NewQueue(clk, h.cached, h.events, m))

	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "kwok-" + rand.String(8)}}
	if err := testEnv.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), nodeClass) })
	if _, err := kwok.NewNodeClassController(testEnv.Client, clk).Reconcile(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	h.class = nodeClass.Name
	// Replacements launch from the pool: m5.large on-demand, of the kwok
	// class. Consolidation never applies, so that only repairs disrupt.
	np := dtesting.MakeNodePool("repair-"+rand.String(6)).
		Req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).Obj()
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: h.class}
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(v1.Never)
	h.pool = testEnv.CreateReadyNodePool(t, np)
	t.Cleanup(h.cleanup)
	return h
}

// restart replaces the disruption loop and queue with new ones, as a new
// process would have (same model and requests, no command in memory).
func (h *harness) restart() {
	h.loop, h.queue = disrupter.NewController(h.clock, h.cached, h.cluster, h.cloud, h.events, h.metrics, h.opts)
}

// launch creates n NodeClaims of the pool and their kwok Nodes, Ready and
// initialized, both with the termination finalizer as the lifecycle
// controller leaves them.
func (h *harness) launch(n int) {
	h.t.Helper()
	for range n {
		claim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: h.pool.Name + "-" + rand.String(6), Labels: map[string]string{v1.NodePoolLabelKey: h.pool.Name},
				Finalizers: []string{v1.TerminationFinalizer}},
			Spec: v1.NodeClaimSpec{
				NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
						{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
					},
					NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: h.class},
				},
				Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			},
		}
		if err := testEnv.Client.Create(h.ctx, claim); err != nil {
			h.t.Fatalf("creating nodeclaim: %v", err)
		}
		h.nodeName = append(h.nodeName, claim.Name)
		h.initialize(claim)
	}
	h.waitForCache()
}

// initialize plays the lifecycle controller for a created NodeClaim: the
// kwok instance is launched, its Node registered, Ready and initialized,
// and the claim Launched, Registered and Initialized.
func (h *harness) initialize(claim *v1.NodeClaim) {
	h.t.Helper()
	env.Get(h.ctx, h.t, testEnv.Client, claim)
	created, err := h.cloud.Create(h.ctx, claim)
	if err != nil {
		h.t.Fatalf("launching %s: %v", claim.Name, err)
	}
	stored := claim.DeepCopy()
	stored.Labels = created.Labels
	if err := testEnv.Client.Update(h.ctx, stored); err != nil {
		h.t.Fatal(err)
	}
	now := metav1.NewTime(h.clock.Now())
	stored.Status.ProviderID, stored.Status.NodeName, stored.Status.ImageID = created.Status.ProviderID, claim.Name, "kwok-image"
	stored.Status.Capacity, stored.Status.Allocatable = created.Status.Capacity, created.Status.Allocatable
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeReady} {
		meta.SetStatusCondition(&stored.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: now})
	}
	if err := testEnv.Client.Status().Update(h.ctx, stored); err != nil {
		h.t.Fatal(err)
	}
	node := h.node(claim.Name)
	node.Finalizers = append(node.Finalizers, v1.TerminationFinalizer)
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	node.Labels[v1.NodeInitializedLabelKey] = "true"
	// Registration removes the unregistered taint; the node lifecycle
	// controller (not running here) the not-ready one the API server's
	// admission adds to a new Node.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == v1.UnregisteredTaintKey || t.Key == corev1.TaintNodeNotReady
	})
	if err := testEnv.Client.Update(h.ctx, node); err != nil {
		h.t.Fatal(err)
	}
	h.setReady(node.Name, corev1.ConditionTrue)
}

// pod creates a pod bound to the node, requesting cpu.
func (h *harness) pod(name, nodeName, cpu string) *corev1.Pod {
	h.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	if err := testEnv.Client.Create(h.ctx, pod); err != nil {
		h.t.Fatalf("creating pod %s: %v", name, err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := testEnv.Client.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("marking pod %s running: %v", name, err)
	}
	return pod
}

// setReady sets the node's Ready condition, changed now.
func (h *harness) setReady(name string, status corev1.ConditionStatus) {
	h.t.Helper()
	node := h.node(name)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastHeartbeatTime: metav1.NewTime(h.clock.Now()), LastTransitionTime: metav1.NewTime(h.clock.Now())}}
	if err := testEnv.Client.Status().Update(h.ctx, node); err != nil {
		h.t.Fatalf("setting Ready=%s on %s: %v", status, name, err)
	}
	if status == corev1.ConditionTrue {
		delete(h.ready, name)
	} else {
		h.ready[name] = h.clock.Now()
	}
}

// waitForCache waits until the cache sees every node's Ready condition and
// every claim's provider ID.
func (h *harness) waitForCache() {
	h.t.Helper()
	env.Eventually(h.t, 30*time.Second, "the cache to see the nodes and claims", func(ctx context.Context) (bool, error) {
		for _, name := range h.nodeName {
			node := &corev1.Node{}
			if err := h.cached.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			want := corev1.ConditionTrue
			if _, sick := h.ready[name]; sick {
				want = corev1.ConditionFalse
			}
			if len(node.Status.Conditions) != 1 || node.Status.Conditions[0].Status != want {
				return false, nil
			}
			claim := &v1.NodeClaim{}
			if err := h.cached.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if claim.Status.ProviderID == "" {
				return false, nil
			}
		}
		return true, nil
	})
}

// settle waits until the cache has every Node, NodeClaim, NodePool and pod
// the test wrote, and the model every Node and NodeClaim at the version the
// cache has.
func (h *harness) settle() {
	h.t.Helper()
	env.Eventually(h.t, 30*time.Second, "the cache and the model to catch up", func(ctx context.Context) (bool, error) {
		for _, l := range []client.ObjectList{&corev1.NodeList{}, &v1.NodeClaimList{}, &v1.NodePoolList{}, &corev1.PodList{}} {
			want, err := env.ResourceVersions(ctx, testEnv.Client, l)
			if err != nil {
				return false, err
			}
			got, err := env.ResourceVersions(ctx, h.cached, l)
			if err != nil || !maps.Equal(want, got) {
				return false, err
			}
		}
		if synced, err := h.cluster.Synced(ctx, h.cached); !synced || err != nil {
			return false, err
		}
		for _, n := range h.cluster.Nodes() {
			if n.NodeClaim != nil {
				fresh := &v1.NodeClaim{}
				if err := h.cached.Get(ctx, client.ObjectKeyFromObject(n.NodeClaim), fresh); err == nil && fresh.ResourceVersion != n.NodeClaim.ResourceVersion {
					return false, nil
				}
			}
			if n.Node != nil {
				fresh := &corev1.Node{}
				if err := h.cached.Get(ctx, client.ObjectKeyFromObject(n.Node), fresh); err == nil && fresh.ResourceVersion != n.Node.ResourceVersion {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// decide settles and runs one pass of the disruption loop.
func (h *harness) decide() {
	h.t.Helper()
	h.settle()
	if _, err := h.loop.Reconcile(h.ctx); err != nil {
		h.t.Fatalf("disruption pass: %v", err)
	}
}

// step settles and takes every queued command one step further.
func (h *harness) step() {
	h.t.Helper()
	h.settle()
	if err := h.queue.Reconcile(h.ctx); err != nil {
		h.t.Fatalf("queue: %v", err)
	}
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	node := &corev1.Node{}
	if err := testEnv.Client.Get(h.ctx, client.ObjectKey{Name: name}, node); err != nil {
		h.t.Fatalf("getting node %s: %v", name, err)
	}
	return node
}

func (h *harness) claim(name string) (*v1.NodeClaim, bool) {
	h.t.Helper()
	claim := &v1.NodeClaim{}
	err := testEnv.Client.Get(h.ctx, client.ObjectKey{Name: name}, claim)
	if client.IgnoreNotFound(err) != nil {
		h.t.Fatal(err)
	}
	return claim, err == nil
}

// replacements lists the NodeClaims launched to replace the named one, and
// has the harness clean them up.
func (h *harness) replacements(of string) []*v1.NodeClaim {
	h.t.Helper()
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(h.ctx, list); err != nil {
		h.t.Fatal(err)
	}
	var out []*v1.NodeClaim
	for i := range list.Items {
		nc := &list.Items[i]
		if slices.Contains(strings.Split(nc.Annotations[disrupter.ReplacesAnnotationKey], ","), of) {
			out = append(out, nc)
			if !slices.Contains(h.nodeName, nc.Name) {
				h.nodeName = append(h.nodeName, nc.Name)
			}
		}
	}
	return out
}

// oneReplacement returns the single replacement NodeClaim launched for
// the NodeClaim of, failing the test when there is not exactly one.
func (h *harness) oneReplacement(of string) *v1.NodeClaim {
	h.t.Helper()
	repl := h.replacements(of)
	if len(repl) != 1 {
		h.t.Fatalf("%d replacements of %s, want 1", len(repl), of)
	}
	return repl[0]
}

// reconcile runs the repair controller once on the stored node.
func (h *harness) reconcile(name string) reconcile.Result {
	h.t.Helper()
	res, err := h.repair.Reconcile(h.ctx, h.node(name))
	if err != nil {
		h.t.Fatalf("reconciling node %s: %v", name, err)
	}
	return res
}

// terminate runs the termination finalizers until the named node and its
// claim are gone.
func (h *harness) terminate(name string) {
	h.t.Helper()
	env.Eventually(h.t, 30*time.Second, "termination to remove the node and its claim", func(ctx context.Context) (bool, error) {
		if claim, ok := h.claim(name); ok {
			if _, err := h.claims.Reconcile(ctx, claim); err != nil {
				return false, err
			}
		}
		node := &corev1.Node{}
		if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, node); err == nil {
			if _, err := h.nodes.Reconcile(ctx, node); err != nil {
				return false, err
			}
			return false, nil
		}
		_, ok := h.claim(name)
		return !ok, nil
	})
}

// counter reads a counter's value.
func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func (h *harness) repaired() (float64, float64) {
	return counter(h.t, h.metrics.NodeClaimsDisrupted.WithLabelValues(health.MetricReason, h.pool.Name)),
		counter(h.t, h.metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues("ready", h.pool.Name, v1.CapacityTypeOnDemand, "kwok-image"))
}

func (h *harness) cleanup() {
	ctx := context.Background()
	for _, name := range h.nodeName {
		for _, obj := range []client.Object{&corev1.Node{}, &v1.NodeClaim{}} {
			if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
				continue
			}
			if len(obj.GetFinalizers()) > 0 {
				patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
				obj.SetFinalizers(nil)
				_ = testEnv.Client.Patch(ctx, obj, patch)
			}
			_ = testEnv.Client.Delete(ctx, obj)
		}
	}
}
