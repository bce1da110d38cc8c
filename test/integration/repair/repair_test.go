package repair_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// harness is one NodePool of kwok nodes, the repair controller and the
// termination finalizers on the manager's cached client and a fake clock.
type harness struct {
	t        *testing.T
	ctx      context.Context
	clock    *clocktesting.FakeClock
	cloud    *kwok.CloudProvider
	events   *env.EventLog
	metrics  *metrics.Metrics
	cached   client.Client
	pool     *v1.NodePool
	class    string
	repair   *health.Controller
	claims   *termination.NodeClaimController
	nodes    *termination.NodeController
	ready    map[string]time.Time // node -> when it turned NotReady (zero: Ready)
	nodeName []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
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
	h := &harness{t: t, ctx: ctx, clock: clk, cloud: cloud, events: &env.EventLog{}, metrics: m, ready: map[string]time.Time{}}
	mgr := testEnv.StartManager(t, func(manager.Manager) error { return nil })
	h.cached = mgr.GetClient()
	h.repair = health.NewController(clk, h.cached, cloud, h.events, m)
	h.claims = termination.NewNodeClaimController(clk, h.cached, cloud, h.events, m)
	h.nodes = termination.NewNodeController(clk, h.cached, cloud, h.events, m, eviction.NewQueue(clk, h.cached, h.events, m))

	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "kwok-" + rand.String(8)}}
	if err := testEnv.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	if _, err := kwok.NewNodeClassController(testEnv.Client, clk).Reconcile(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	h.class = nodeClass.Name
	h.pool = testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("repair-"+rand.String(6)).Obj())
	t.Cleanup(h.cleanup)
	return h
}

// launch creates n NodeClaims of the pool and their kwok Nodes, Ready, both
// with the termination finalizer as the lifecycle controller leaves them.
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
		created, err := h.cloud.Create(h.ctx, claim)
		if err != nil {
			h.t.Fatalf("launching %s: %v", claim.Name, err)
		}
		stored := claim.DeepCopy()
		stored.Labels = created.Labels
		if err := testEnv.Client.Update(h.ctx, stored); err != nil {
			h.t.Fatal(err)
		}
		stored.Status.ProviderID, stored.Status.NodeName, stored.Status.ImageID = created.Status.ProviderID, claim.Name, "kwok-image"
		if err := testEnv.Client.Status().Update(h.ctx, stored); err != nil {
			h.t.Fatal(err)
		}
		node := h.node(claim.Name)
		controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
		if err := testEnv.Client.Update(h.ctx, node); err != nil {
			h.t.Fatal(err)
		}
		h.nodeName = append(h.nodeName, node.Name)
		h.setReady(node.Name, corev1.ConditionTrue)
	}
	h.waitForCache()
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
				return false, err
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
				return false, err
			}
			if claim.Status.ProviderID == "" {
				return false, nil
			}
		}
		return true, nil
	})
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

// reconcile runs the repair controller once on the stored node.
func (h *harness) reconcile(name string) reconcile.Result {
	h.t.Helper()
	res, err := h.repair.Reconcile(h.ctx, h.node(name))
	if err != nil {
		h.t.Fatalf("reconciling node %s: %v", name, err)
	}
	return res
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

// TestNotReadyNodeIsRepairedAfterItsToleration: 1 of 5 kwok nodes turns
// NotReady. During the provider's toleration the controller only asks to
// come back when it ends; then it deletes the NodeClaim with a termination
// deadline of now, publishes DisruptionTerminating and counts the repair,
// and termination takes the dead node and its claim away at once (no drain
// waits on a kubelet that is gone).
func TestNotReadyNodeIsRepairedAfterItsToleration(t *testing.T) {
	h := newHarness(t)
	h.launch(5)
	toleration := h.cloud.RepairPolicies()[0].TolerationDuration
	sick := h.nodeName[0]

	// 1. Healthy nodes need nothing.
	if res := h.reconcile(sick); !res.IsZero() {
		t.Errorf("healthy node: result %+v, want none", res)
	}

	// 2. NotReady: wait for the toleration, whatever the time within it.
	h.setReady(sick, corev1.ConditionFalse)
	h.waitForCache()
	if res := h.reconcile(sick); res.RequeueAfter != toleration {
		t.Errorf("just NotReady: requeue after %v, want %v", res.RequeueAfter, toleration)
	}
	h.clock.Step(toleration - time.Second)
	if res := h.reconcile(sick); res.RequeueAfter != time.Second {
		t.Errorf("1s before the end of the toleration: requeue after %v, want 1s", res.RequeueAfter)
	}
	if claim, ok := h.claim(sick); !ok || !claim.DeletionTimestamp.IsZero() {
		t.Fatalf("claim deleted during the toleration")
	}
	if a, b := h.repaired(); a != 0 || b != 0 {
		t.Errorf("repairs counted during the toleration: %v, %v", a, b)
	}

	// 3. The toleration ends: the claim is deleted, its deadline is now.
	h.clock.Step(time.Second)
	if res := h.reconcile(sick); !res.IsZero() {
		t.Errorf("repair: result %+v, want none", res)
	}
	claim, ok := h.claim(sick)
	if !ok || claim.DeletionTimestamp.IsZero() {
		t.Fatalf("claim %s not deleted after the toleration", sick)
	}
	if got, want := claim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey], h.clock.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want %q (now)", got, want)
	}
	h.events.Expect(t, health.ReasonTerminating, sick, "Unhealthy (Ready=False since")
	if a, b := h.repaired(); a != 1 || b != 1 {
		t.Errorf(`karpenter_nodeclaims_disrupted_total{reason="unhealthy"} = %v, karpenter_nodeclaims_unhealthy_disrupted_total{condition="ready"} = %v; want 1, 1`, a, b)
	}
	for _, other := range h.nodeName[1:] {
		if claim, ok := h.claim(other); !ok || !claim.DeletionTimestamp.IsZero() {
			t.Errorf("healthy node %s's claim deleted", other)
		}
	}

	// 4. A second pass on the same node does not count it again.
	if _, err := h.repair.Reconcile(h.ctx, h.node(sick)); err != nil {
		t.Fatal(err)
	}
	if a, _ := h.repaired(); a != 1 {
		t.Errorf("repairs counted twice: %v", a)
	}

	// 5. Termination: the claim deletes its Node; the NotReady node whose
	// instance is going is not drained; then the claim goes.
	env.Eventually(t, 30*time.Second, "termination to remove the node and its claim", func(ctx context.Context) (bool, error) {
		if claim, ok := h.claim(sick); ok {
			if _, err := h.claims.Reconcile(ctx, claim); err != nil {
				return false, err
			}
		}
		node := &corev1.Node{}
		if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: sick}, node); err == nil {
			if _, err := h.nodes.Reconcile(ctx, node); err != nil {
				return false, err
			}
			return false, nil
		}
		_, ok := h.claim(sick)
		return !ok, nil
	})
}

// TestRepairBlockedWhenMoreThan20PercentUnhealthy: with 2 of 5 nodes
// NotReady past their toleration nothing is repaired and NodeRepairBlocked
// names the count on the NodePool, the Node and the NodeClaim; once one
// recovers, the other is repaired on the next look.
func TestRepairBlockedWhenMoreThan20PercentUnhealthy(t *testing.T) {
	h := newHarness(t)
	h.launch(5)
	toleration := h.cloud.RepairPolicies()[0].TolerationDuration
	a, b := h.nodeName[0], h.nodeName[1]
	h.setReady(a, corev1.ConditionFalse)
	h.setReady(b, corev1.ConditionFalse)
	h.waitForCache()
	h.clock.Step(toleration + time.Minute)

	for _, name := range []string{a, b} {
		if res := h.reconcile(name); res.RequeueAfter != health.BlockedRecheck {
			t.Errorf("blocked %s: requeue after %v, want %v", name, res.RequeueAfter, health.BlockedRecheck)
		}
		if claim, ok := h.claim(name); !ok || !claim.DeletionTimestamp.IsZero() {
			t.Errorf("claim %s deleted with 2 of 5 nodes unhealthy", name)
		}
	}
	want := fmt.Sprintf("2 of 5 of the nodes of NodePool %s are unhealthy, more than 20%% (at most 1 may be)", h.pool.Name)
	h.events.Expect(t, health.ReasonBlocked, h.pool.Name, want)
	h.events.Expect(t, health.ReasonBlocked, a, want)
	h.events.Expect(t, health.ReasonBlocked, b, want)
	if n, m := h.repaired(); n != 0 || m != 0 {
		t.Errorf("repairs counted while blocked: %v, %v", n, m)
	}
	if got := h.events.Messages(health.ReasonTerminating, a); len(got) != 0 {
		t.Errorf("DisruptionTerminating while blocked: %q", got)
	}

	// b recovers: 1 of 5 is within the 20%, so a is repaired.
	h.setReady(b, corev1.ConditionTrue)
	h.waitForCache()
	if res := h.reconcile(a); !res.IsZero() {
		t.Errorf("repair after recovery: result %+v", res)
	}
	if claim, ok := h.claim(a); !ok || claim.DeletionTimestamp.IsZero() {
		t.Errorf("claim %s not repaired once 1 of 5 is unhealthy", a)
	}
	if claim, _ := h.claim(b); !claim.DeletionTimestamp.IsZero() {
		t.Errorf("recovered node %s repaired", b)
	}
	h.events.Expect(t, health.ReasonTerminating, a, "Unhealthy")
}
