package disruption_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/disruptionstatus"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/expiration"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// harness wires the disruption controllers as the composition root does:
// the manager's cached client, a cluster-state model fed by the real
// informers, a fake clock, the fake cloud provider and a recording event
// sink. Tests call Reconcile themselves.
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
	opts    disrupter.Options

	loop       *disrupter.Controller
	queue      *disrupter.Queue
	expiry     *expiration.Controller
	conditions *disruptionstatus.Controller
	podEvents  *disruptionstatus.PodEventsController
	claims     *termination.NodeClaimController
}

// newHarness removes what earlier tests left and starts a manager whose
// informers feed a fresh model.
func newHarness(t *testing.T, mutate func(*disrupter.Options)) *harness {
	t.Helper()
	testEnv.RemoveClusterScoped(t)
	ctx := log.IntoContext(context.Background(), testlog.Logger(t, 1))
	ns := testEnv.Namespace(t)
	nsObj := &corev1.Namespace{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(nil)
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
	h.opts = disrupter.DefaultOptions()
	if mutate != nil {
		mutate(&h.opts)
	}
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(h.cluster) {
			if err := c.Register(ctx, mgr); err != nil {
				return err
			}
		}
		return nil
	})
	h.cached = mgr.GetClient()
	h.loop, h.queue = disrupter.NewController(h.clock, h.cached, h.cluster, h.cloud, h.events, m, h.opts)
	h.expiry = expiration.NewController(h.clock, h.cached, h.events, m)
	h.conditions = disruptionstatus.NewController(h.clock, h.cached, h.cloud)
	h.podEvents = disruptionstatus.NewPodEventsController(h.clock, h.cached)
	h.claims = termination.NewNodeClaimController(h.clock, h.cached, h.cloud, h.events, m)
	return h
}

// restart replaces the loop and queue with new ones, as a new process
// would have (same model, nothing in memory).
func (h *harness) restart() {
	h.loop, h.queue = disrupter.NewController(h.clock, h.cached, h.cluster, h.cloud, h.events, h.metrics, h.opts)
}

// --- objects ---

// pool creates a Ready NodePool: WhenEmptyOrUnderutilized after 30s, all
// nodes may be disrupted at once, nodes never expire.
func (h *harness) pool(name string, mutate func(*v1.NodePool)) *v1.NodePool {
	h.t.Helper()
	np := dtesting.MakeNodePool(name).Obj()
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("30s"),
		Budgets:             []v1.Budget{{Nodes: intstr.FromString("100%")}},
	}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
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

// claimFor renders a NodeClaim of the pool for one instance type, as
// provisioning would.
func (h *harness) claimFor(name string, np *v1.NodePool, typeName, zone, capacityType string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{v1.NodePoolLabelKey: np.Name},
			Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey: nodepoolutil.TemplateHash(np), v1.NodePoolHashVersionAnnotationKey: nodepoolutil.HashVersion,
			},
			Finalizers: []string{v1.TerminationFinalizer},
		},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: func() v1.NodeClaimTemplateSpec {
			spec := *np.Spec.Template.Spec.DeepCopy()
			spec.Requirements = append(spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{typeName}},
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
				v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
			)
			return spec
		}()},
	}
}

// node launches a NodeClaim of the pool at the fake provider and plays the
// lifecycle controller: the claim is Launched, Registered and Initialized
// now, and its Node is Ready and labelled initialized.
func (h *harness) node(name string, np *v1.NodePool, typeName, zone, capacityType string) (*v1.NodeClaim, *corev1.Node) {
	h.t.Helper()
	nc := h.claimFor(name, np, typeName, zone, capacityType)
	if err := h.direct.Create(h.ctx, nc); err != nil {
		h.t.Fatalf("creating nodeclaim %s: %v", name, err)
	}
	return nc, h.initialize(nc)
}

// initialize launches a created NodeClaim, registers its Node and
// initializes both, as lifecycle and the kubelet would.
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
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: maps.Clone(launched.Labels), Finalizers: []string{v1.TerminationFinalizer}},
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

// pod creates a pod of app bound to the node, requesting cpu.
func (h *harness) pod(name, app, nodeName, cpu string) *corev1.Pod {
	h.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	if err := h.direct.Create(h.ctx, pod); err != nil {
		h.t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
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

func (h *harness) get(obj client.Object) {
	h.t.Helper()
	env.Get(h.ctx, h.t, h.direct, obj)
}

func (h *harness) exists(obj client.Object) bool {
	h.t.Helper()
	return env.Exists(h.ctx, h.t, h.direct, obj)
}

// deleted reports whether obj is gone or being deleted. NodeClaims carry
// the termination finalizer from creation, and no termination controller
// runs here to remove it.
func (h *harness) deleted(obj client.Object) bool {
	h.t.Helper()
	live := obj.DeepCopyObject().(client.Object)
	if err := h.direct.Get(h.ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		if apierrors.IsNotFound(err) {
			return true
		}
		h.t.Fatalf("getting %T %s: %v", obj, obj.GetName(), err)
	}
	return live.GetDeletionTimestamp() != nil
}

// claims lists the NodeClaims by name.
func (h *harness) claimsByName() map[string]*v1.NodeClaim {
	h.t.Helper()
	list := &v1.NodeClaimList{}
	if err := h.direct.List(h.ctx, list); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*v1.NodeClaim{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// replacements lists the NodeClaims that replace the named one, leaving
// out those being deleted.
func (h *harness) replacements(of string) []*v1.NodeClaim {
	h.t.Helper()
	var out []*v1.NodeClaim
	for _, nc := range h.claimsByName() {
		if nc.DeletionTimestamp == nil && slices.Contains(strings.Split(nc.Annotations[disrupter.ReplacesAnnotationKey], ","), of) {
			out = append(out, nc)
		}
	}
	slices.SortFunc(out, func(a, b *v1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func tainted(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
}

// --- reconciling ---

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
		pods := &corev1.PodList{}
		if err := h.cached.List(h.ctx, pods, client.InNamespace(h.ns)); err != nil {
			return false, err
		}
		bound := map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound[p.Name] = true
			}
		}
		for _, n := range h.cluster.Nodes() {
			if n.NodeClaim != nil {
				fresh := &v1.NodeClaim{}
				if err := h.cached.Get(h.ctx, client.ObjectKeyFromObject(n.NodeClaim), fresh); err == nil && fresh.ResourceVersion != n.NodeClaim.ResourceVersion {
					return false, nil
				}
			}
			if n.Node != nil {
				fresh := &corev1.Node{}
				if err := h.cached.Get(h.ctx, client.ObjectKeyFromObject(n.Node), fresh); err == nil && fresh.ResourceVersion != n.Node.ResourceVersion {
					return false, nil
				}
			}
			for _, p := range n.Pods {
				if p.Namespace == h.ns {
					delete(bound, p.Name)
				}
			}
		}
		return len(bound) == 0, nil
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

// step settles and takes every queued command one step further.
func (h *harness) step() {
	h.t.Helper()
	h.settle()
	if err := h.queue.Reconcile(h.ctx); err != nil {
		h.t.Fatalf("queue: %v", err)
	}
}

// waitFor polls condition for up to 30 s (env.Eventually).
func waitFor(t *testing.T, what string, condition func() (bool, error)) {
	t.Helper()
	env.Eventually(t, 30*time.Second, what, func(context.Context) (bool, error) { return condition() })
}

// expectEvent fails unless an event with the reason about the named object
// has a message containing want.
func (h *harness) expectEvent(reason, name, want string) {
	h.t.Helper()
	h.events.Expect(h.t, reason, name, want)
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
