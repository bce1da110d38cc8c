package static_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/static"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// harness wires the static controller, the disruption loop and the
// provisioner as the composition root does: the manager's cached client, a
// cluster-state model fed by the real informers, a fake clock, the fake
// cloud provider and a recording event sink. Tests call Reconcile
// themselves.
type harness struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	clock   *clocktesting.FakeClock
	cloud   *fake.CloudProvider
	events  *env.EventLog
	metrics *metrics.Metrics
	cluster *state.Cluster
	cached  client.Client
	direct  client.Client

	static      *static.Controller
	loop        *disrupter.Controller
	queue       *disrupter.Queue
	provisioner *provisioning.Provisioner
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	testEnv.RemoveClusterScoped(t)
	ctx := log.IntoContext(context.Background(), testlog.Logger(t, 1))
	ns := testEnv.Namespace(t)
	nsObj := &corev1.Namespace{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{
		t: t, ctx: ctx, ns: ns, metrics: m, events: &env.EventLog{}, direct: testEnv.Client,
		// Server time, so that creation timestamps and the clock agree.
		clock: clocktesting.NewFakeClock(nsObj.CreationTimestamp.Time),
		cloud: fake.NewCloudProvider(),
	}
	h.cloud.InstanceTypes = dtesting.SmallMediumLarge(true)
	h.cluster = state.NewCluster(h.clock).WithAPIReader(testEnv.Client)
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(h.cluster) {
			if err := c.Register(ctx, mgr); err != nil {
				return err
			}
		}
		return nil
	})
	h.cached = mgr.GetClient()
	h.static = static.NewController(h.clock, h.cached, h.cluster, h.cloud, h.events, m)
	h.loop, h.queue = disrupter.NewController(h.clock, h.cached, h.cluster, h.cloud, h.events, m, disrupter.DefaultOptions())
	h.provisioner = provisioning.NewProvisioner(h.clock, h.cached, h.cluster, h.cloud, h.events, m, provisioning.Options{})
	return h
}

// pool creates a Ready NodePool (consolidating WhenEmptyOrUnderutilized
// after 30s, all nodes may go at once, nodes never expire), static with
// replicas unless replicas is negative.
func (h *harness) pool(name string, replicas int64, mutate func(*v1.NodePool)) *v1.NodePool {
	h.t.Helper()
	np := dtesting.MakeNodePool(name).Obj()
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("30s"),
		Budgets:             []v1.Budget{{Nodes: intstr.FromString("100%")}},
	}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	if replicas >= 0 {
		np.Spec.Replicas = ptr.To(replicas)
	}
	if mutate != nil {
		mutate(np)
	}
	np.UID = ""
	if err := h.direct.Create(h.ctx, np); err != nil {
		h.t.Fatalf("creating nodepool %s: %v", name, err)
	}
	meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeNodeClassReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := h.direct.Status().Update(h.ctx, np); err != nil {
		h.t.Fatalf("marking nodepool %s ready: %v", name, err)
	}
	return np
}

// scale sets the pool's replicas, as `kubectl scale nodepool` would.
func (h *harness) scale(np *v1.NodePool, replicas int64) {
	h.t.Helper()
	h.get(np)
	np.Spec.Replicas = ptr.To(replicas)
	if err := h.direct.Update(h.ctx, np); err != nil {
		h.t.Fatalf("scaling nodepool %s to %d: %v", np.Name, replicas, err)
	}
}

// reconcile settles and runs the static controller once on the pool.
func (h *harness) reconcile(np *v1.NodePool) {
	h.t.Helper()
	h.settle()
	h.get(np)
	if _, err := h.static.Reconcile(h.ctx, np); err != nil {
		h.t.Fatalf("reconciling static nodepool %s: %v", np.Name, err)
	}
}

// claimsOf lists the pool's NodeClaims that are not being deleted, by name.
func (h *harness) claimsOf(np *v1.NodePool) []*v1.NodeClaim {
	h.t.Helper()
	list := &v1.NodeClaimList{}
	if err := h.direct.List(h.ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
		h.t.Fatal(err)
	}
	var out []*v1.NodeClaim
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *v1.NodeClaim) int { return cmpString(a.Name, b.Name) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func names(claims []*v1.NodeClaim) []string {
	out := make([]string, 0, len(claims))
	for _, nc := range claims {
		out = append(out, nc.Name)
	}
	return out
}

// dynamicClaim creates a NodeClaim of a dynamic pool, as provisioning would.
func (h *harness) dynamicClaim(name string, np *v1.NodePool, typeName string) *v1.NodeClaim {
	h.t.Helper()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: np.Name}},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: func() v1.NodeClaimTemplateSpec {
			spec := *np.Spec.Template.Spec.DeepCopy()
			spec.Requirements = append(spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{typeName}},
				v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			)
			return spec
		}()},
	}
	if err := h.direct.Create(h.ctx, nc); err != nil {
		h.t.Fatalf("creating nodeclaim %s: %v", name, err)
	}
	return nc
}

// initialize launches a created NodeClaim at the fake provider, registers
// its Node and initializes both, as lifecycle and the kubelet would.
func (h *harness) initialize(nc *v1.NodeClaim) *corev1.Node {
	h.t.Helper()
	h.get(nc)
	launched, err := h.cloud.Create(h.ctx, nc)
	if err != nil {
		h.t.Fatalf("launching %s: %v", nc.Name, err)
	}
	stored := nc.DeepCopy()
	nc.Labels = launched.Labels
	if err := h.direct.Patch(h.ctx, nc, client.MergeFrom(stored)); err != nil {
		h.t.Fatalf("labelling nodeclaim %s: %v", nc.Name, err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: maps.Clone(launched.Labels)},
		Spec:       corev1.NodeSpec{ProviderID: launched.Status.ProviderID},
	}
	node.Labels[corev1.LabelHostname] = nc.Name
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	node.Labels[v1.NodeInitializedLabelKey] = "true"
	if err := h.direct.Create(h.ctx, node); err != nil {
		h.t.Fatalf("creating node %s: %v", nc.Name, err)
	}
	node.Status.Capacity, node.Status.Allocatable = launched.Status.Capacity, launched.Status.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.direct.Status().Update(h.ctx, node); err != nil {
		h.t.Fatalf("marking node %s ready: %v", nc.Name, err)
	}
	// The API server taints a new Node not-ready; the node lifecycle
	// controller, which does not run here, would lift it once Ready.
	h.get(node)
	node.Spec.Taints = nil
	if err := h.direct.Update(h.ctx, node); err != nil {
		h.t.Fatalf("untainting node %s: %v", nc.Name, err)
	}
	h.get(nc)
	now := metav1.NewTime(h.clock.Now())
	nc.Status.ProviderID, nc.Status.NodeName = launched.Status.ProviderID, node.Name
	nc.Status.Capacity, nc.Status.Allocatable = launched.Status.Capacity, launched.Status.Allocatable
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeReady} {
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: now})
	}
	if err := h.direct.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("initializing nodeclaim %s: %v", nc.Name, err)
	}
	return node
}

// pod creates a running pod bound to the node, requesting cpu.
func (h *harness) pod(name, nodeName, cpu string) *corev1.Pod {
	h.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "main", Image: env.PauseImage,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	if err := h.direct.Create(h.ctx, pod); err != nil {
		h.t.Fatalf("creating pod %s: %v", name, err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := h.direct.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("marking pod %s running: %v", name, err)
	}
	return pod
}

// pendingPod creates a pod the kube-scheduler could not place, requesting cpu.
func (h *harness) pendingPod(name, cpu string) *corev1.Pod {
	h.t.Helper()
	return testEnv.CreatePendingPod(h.t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	})
}

func (h *harness) get(obj client.Object) {
	h.t.Helper()
	env.Get(h.ctx, h.t, h.direct, obj)
}

// settle waits until the cache has every object the test wrote and the
// model has every Node, NodeClaim and pod at the version the cache has.
func (h *harness) settle() {
	h.t.Helper()
	waitFor(h.t, "the cache and the model to catch up", func() (bool, error) {
		for _, l := range []client.ObjectList{&corev1.NodeList{}, &v1.NodeClaimList{}, &v1.NodePoolList{}, &corev1.PodList{}} {
			want, err := env.ResourceVersions(h.ctx, h.direct, l)
			if err != nil {
				return false, err
			}
			got, err := env.ResourceVersions(h.ctx, h.cached, l)
			if err != nil || !maps.Equal(want, got) {
				return false, err
			}
		}
		if synced, err := h.cluster.Synced(h.ctx, h.cached); !synced || err != nil {
			return false, err
		}
		for _, n := range h.cluster.Nodes() {
			if n.NodeClaim != nil {
				fresh := &v1.NodeClaim{}
				if err := h.cached.Get(h.ctx, client.ObjectKeyFromObject(n.NodeClaim), fresh); err != nil || fresh.ResourceVersion != n.NodeClaim.ResourceVersion {
					return false, client.IgnoreNotFound(err)
				}
			}
			if n.Node != nil {
				fresh := &corev1.Node{}
				if err := h.cached.Get(h.ctx, client.ObjectKeyFromObject(n.Node), fresh); err != nil || fresh.ResourceVersion != n.Node.ResourceVersion {
					return false, client.IgnoreNotFound(err)
				}
			}
		}
		return true, nil
	})
}

// settlePods waits until the model has the test's running pods bound.
func (h *harness) settlePods(want int) {
	h.t.Helper()
	waitFor(h.t, "the model to hold the bound pods", func() (bool, error) {
		bound := 0
		for _, n := range h.cluster.Nodes() {
			for _, p := range n.Pods {
				if p.Namespace == h.ns {
					bound++
				}
			}
		}
		return bound == want, nil
	})
}

// decide settles and runs one pass of the disruption loop.
func (h *harness) decide() time.Duration {
	h.t.Helper()
	h.settle()
	wait, err := h.loop.Reconcile(h.ctx)
	if err != nil {
		h.t.Fatalf("disruption pass: %v", err)
	}
	return wait
}

// step settles and takes every queued disruption command one step further.
func (h *harness) step() {
	h.t.Helper()
	h.settle()
	if err := h.queue.Reconcile(h.ctx); err != nil {
		h.t.Fatalf("queue: %v", err)
	}
}

// drift marks the claim drifted (as the conditions controller would).
func (h *harness) drift(nc *v1.NodeClaim) {
	h.t.Helper()
	h.get(nc)
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(h.clock.Now()),
	})
	if err := h.direct.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("marking %s drifted: %v", nc.Name, err)
	}
}

func tainted(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// waitFor polls condition for up to 30 s (env.Eventually).
func waitFor(t *testing.T, what string, condition func() (bool, error)) {
	t.Helper()
	env.Eventually(t, 30*time.Second, what, func(context.Context) (bool, error) { return condition() })
}
