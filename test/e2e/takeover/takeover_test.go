package takeover_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestTakeOverFromKarpenter: three nodes of a NodePool (consolidating empty
// nodes after 30 s) and one of a pool
// whose nodes expire after two minutes, each running a workload, as
// Karpenter v1.14 left them. Dovetail starts and:
//
//  1. drifts, relaunches and deletes nothing, and leaves the NodePool hash
//     annotations as Karpenter wrote them (nothing changes for 30 s);
//  2. places a new pod that fits on existing capacity there, launching nothing;
//  3. consolidates a node emptied of its workload, once consolidateAfter (30 s)
//     has passed since its last pod left, and not before;
//  4. replaces the node that outlived its expireAfter: the NodeClaim is
//     deleted at creation + expireAfter and its pod gets a new node.
func TestTakeOverFromKarpenter(t *testing.T) {
	ctx := context.Background()
	nodeClass := karpenterNodeClass()
	general := karpenterNodePool("general", "30s", "720h")
	// Only emptiness: under WhenEmptyOrUnderutilized, moving a's pod onto
	// the emptied b and deleting a is as good a consolidation as deleting b.
	general.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	expiring := karpenterNodePool("expiring", "Never", "150s")
	t.Cleanup(func() { forceRemove(t) })
	for _, obj := range []client.Object{nodeClass, general, expiring} {
		create(t, obj)
	}
	a := karpenterMachine(t, general, "aaaaa", "test-zone-a")
	b := karpenterMachine(t, general, "bbbbb", "test-zone-b")
	c := karpenterMachine(t, general, "ccccc", "test-zone-c")
	e := karpenterMachine(t, expiring, "eeeee", "test-zone-d")
	machines := []machine{a, b, c, e}

	// The workloads run on them before Dovetail starts, placed by the
	// kube-scheduler: 3-CPU pods fill a, b and e (3.9 CPUs allocatable);
	// a 1-CPU pod leaves room on c.
	ns := testEnv.Namespace(t)
	create(t, deployment(ns, "fill-a", a, "3"))
	create(t, deployment(ns, "fill-b", b, "3"))
	create(t, deployment(ns, "part-c", c, "1"))
	create(t, deployment(ns, "fill-e", e, "3"))
	for app, m := range map[string]machine{"fill-a": a, "fill-b": b, "part-c": c, "fill-e": e} {
		pods := workloads.WaitRunning(t, testEnv.Client, ns, app, 1, 3*time.Minute)
		if pods[0].Spec.NodeName != m.node.Name {
			t.Fatalf("before Dovetail starts: the kube-scheduler put %s's pod on %s, not %s as the test arranged", app, pods[0].Spec.NodeName, m.node.Name)
		}
	}

	claims := watchClaims(t)
	startDovetail(t)
	t.Cleanup(func() { teardown(t) })

	// 1. Nothing changes for 30 s: no NodeClaim created or deleted, none
	// drifted, the Nodes untouched by disruption, the hashes Karpenter's.
	window, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	<-window.Done()
	if created, deleted := claims.created(), claims.deleted(); len(created) != 0 || len(deleted) != 0 {
		t.Fatalf("after taking over: NodeClaims created %v, deleted %v; want none", created, deleted)
	}
	for _, m := range machines {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: m.claim.Name}}
		env.Get(ctx, t, testEnv.Client, nc)
		if cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
			t.Errorf("NodeClaim %s drifted: %s: %s", nc.Name, cond.Reason, cond.Message)
		}
		for _, key := range []string{v1.NodePoolHashAnnotationKey, v1.NodePoolHashVersionAnnotationKey} {
			if got, want := nc.Annotations[key], m.claim.Annotations[key]; got != want {
				t.Errorf("NodeClaim %s annotation %s = %q, Karpenter wrote %q", nc.Name, key, got, want)
			}
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.node.Name}}
		env.Get(ctx, t, testEnv.Client, node)
		if node.UID != m.node.UID || node.DeletionTimestamp != nil || slices.ContainsFunc(node.Spec.Taints, isDisruptedTaint) {
			t.Errorf("node %s was replaced, deleted or tainted for disruption: %+v", node.Name, node.Spec.Taints)
		}
	}
	t.Logf("taken over: %d NodeClaims, none drifted, created or deleted in 30s", len(machines))

	// 2. A new pod that fits on c runs there; nothing is launched for it.
	workloads.Scale(t, testEnv.Client, ns, "part-c", 2)
	pods := workloads.WaitRunning(t, testEnv.Client, ns, "part-c", 2, 3*time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName != c.node.Name {
			t.Errorf("pod %s runs on %s, want the existing node %s", p.Name, p.Spec.NodeName, c.node.Name)
		}
	}
	if created := claims.created(); len(created) != 0 {
		t.Fatalf("NodeClaims %v created for a pod that fits on existing capacity", created)
	}

	// 3. b, emptied, is consolidated once consolidateAfter has passed.
	emptied := time.Now()
	workloads.Scale(t, testEnv.Client, ns, "fill-b", 0)
	env.Eventually(t, 2*time.Minute, "NodeClaim "+b.claim.Name+" deleted", func(context.Context) (bool, error) {
		return slices.Contains(claims.deleted(), b.claim.Name), nil
	})
	waited := claims.deletedAt(b.claim.Name).Sub(emptied)
	if waited < 30*time.Second-time.Second {
		t.Errorf("NodeClaim %s was deleted %s after its last pod left, before consolidateAfter (30s)", b.claim.Name, waited)
	}
	if deleted := claims.deleted(); len(deleted) != 1 || len(claims.created()) != 0 {
		t.Errorf("consolidating the empty node deleted %v and created %v; want only %s deleted", deleted, claims.created(), b.claim.Name)
	}
	t.Logf("empty NodeClaim %s consolidated %s after its last pod left", b.claim.Name, waited.Round(time.Second))

	// 4. e expires at creation + 150 s and its pod gets a new node.
	env.Eventually(t, 3*time.Minute, "NodeClaim "+e.claim.Name+" deleted", func(context.Context) (bool, error) {
		return slices.Contains(claims.deleted(), e.claim.Name), nil
	})
	expiredAt := e.claim.CreationTimestamp.Add(150 * time.Second)
	if at := claims.deletedAt(e.claim.Name); at.Before(expiredAt.Add(-time.Second)) {
		t.Errorf("NodeClaim %s deleted at %s, before it expired at %s", e.claim.Name, at, expiredAt)
	}
	// The claim's deletion is seen before the drain evicts the pod, which
	// still runs on the expiring node for a moment: wait for it to run
	// elsewhere (or time out, and the check below says where it is).
	var moved []corev1.Pod
	env.Eventually(t, 3*time.Minute, "the fill-e pod to run off the expired node", func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		if err := testEnv.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "fill-e"}); err != nil {
			return false, err
		}
		moved = moved[:0]
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != e.node.Name {
				moved = append(moved, p)
			}
		}
		return len(list.Items) == 1 && len(moved) == 1, nil
	})
	pods = moved
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Spec.NodeName}}
	env.Get(ctx, t, testEnv.Client, node)
	if node.Name == e.node.Name || node.Labels[v1.NodePoolLabelKey] != expiring.Name || node.Labels[corev1.LabelInstanceTypeStable] != instanceType {
		t.Errorf("the expired node's pod runs on %s (pool %q, type %q), want a new %s node of pool %s",
			node.Name, node.Labels[v1.NodePoolLabelKey], node.Labels[corev1.LabelInstanceTypeStable], instanceType, expiring.Name)
	}
	if created := claims.created(); len(created) != 1 {
		t.Errorf("NodeClaims created %v, want one replacement for the expired node", created)
	}
	for _, m := range []machine{a, c} {
		if slices.Contains(claims.deleted(), m.claim.Name) {
			t.Errorf("NodeClaim %s, still in use, was deleted", m.claim.Name)
		}
	}
	t.Logf("expired NodeClaim %s replaced by %v; pod on %s", e.claim.Name, claims.created(), node.Name)
}

// TestKarpenterKWOKInstanceTypeLaunches: a NodePool written for Karpenter's
// kwok provider, requiring node.kubernetes.io/instance-type In
// [c-4x-amd64-linux], launches that type for a pending pod, with Karpenter
// kwok's labels and zones.
func TestKarpenterKWOKInstanceTypeLaunches(t *testing.T) {
	ctx := context.Background()
	pool := karpenterNodePool("kwoktypes", "Never", "720h")
	t.Cleanup(func() { forceRemove(t) })
	create(t, karpenterNodeClass())
	create(t, pool)
	startDovetail(t)
	t.Cleanup(func() { teardown(t) })
	ns := testEnv.Namespace(t)
	d := deployment(ns, "inflate", machine{}, "2")
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: pool.Name}
	create(t, d)
	pods := workloads.WaitRunning(t, testEnv.Client, ns, "inflate", 1, 3*time.Minute)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Spec.NodeName}}
	env.Get(ctx, t, testEnv.Client, node)
	want := map[string]string{
		corev1.LabelInstanceTypeStable: instanceType, kwok.InstanceFamilyLabelKey: "c", kwok.InstanceSizeLabelKey: "4",
		kwok.InstanceCPULabelKey: "4", kwok.InstanceMemoryLabelKey: "8Gi", corev1.LabelArchStable: "amd64",
		corev1.LabelOSStable: "linux", v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, "team": "platform",
	}
	for key, value := range want {
		if got := node.Labels[key]; got != value {
			t.Errorf("node %s label %s = %q, want %q", node.Name, key, got, value)
		}
	}
	if zone := node.Labels[corev1.LabelTopologyZone]; !strings.HasPrefix(zone, "test-zone-") {
		t.Errorf("node %s is in zone %q, want one of Karpenter kwok's test-zone-a..d", node.Name, zone)
	}
	t.Logf("pod %s runs on %s (%s in %s)", pods[0].Name, node.Name, node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelTopologyZone])
}

// startDovetail runs the Dovetail controller, offering Karpenter kwok's
// instance types, until the test ends.
func startDovetail(t *testing.T) {
	t.Helper()
	opts := localcluster.OperatorOptions()
	opts.BatchIdleDuration = 500 * time.Millisecond
	opts.BatchMaxDuration = 3 * time.Second
	opts.LogWriter = testlog.Writer(t)
	opts.DisableWebhook = true
	cluster := &localcluster.Cluster{ControlPlane: testEnv.ControlPlane, Client: testEnv.Client}
	controller, err := cluster.StartController(context.Background(), opts, compose.KwokOptions{InstanceTypes: string(kwok.InstanceTypesKarpenterKWOK)})
	if err != nil {
		t.Fatalf("starting the Dovetail controller: %v", err)
	}
	// Cleanups run last first: the caller registers teardown after this,
	// so the controller still runs while teardown waits for it to drain
	// and remove the nodes.
	t.Cleanup(func() {
		if err := controller.Stop(); err != nil {
			t.Errorf("controller stopped with error: %v", err)
		}
	})
}

// teardown deletes the test's namespaces, NodePools, NodeClaims and
// NodeClass and waits until the NodeClaims and their Nodes are gone.
func teardown(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	testEnv.DeleteTestNamespaces(t, 0)
	for _, list := range []client.ObjectList{&v1.NodePoolList{}, &v1.NodeClaimList{}} {
		if err := testEnv.Client.List(ctx, list); err != nil {
			continue
		}
		_ = meta.EachListItem(list, func(obj runtime.Object) error {
			_ = testEnv.Client.Delete(ctx, obj.(client.Object))
			return nil
		})
	}
	env.Eventually(t, 3*time.Minute, "every NodeClaim and its node gone", func(ctx context.Context) (bool, error) {
		claims := &v1.NodeClaimList{}
		nodes := &corev1.NodeList{}
		if err := testEnv.Client.List(ctx, claims); err != nil {
			return false, err
		}
		if err := testEnv.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
	_ = testEnv.Client.Delete(ctx, karpenterNodeClass())
}

// forceRemove, the last cleanup, deletes whatever a failed test left once
// no controller runs: the NodeClass, NodePools, and the NodeClaims and
// Nodes of NodePools, their finalizers removed, so the next test starts
// from an empty cluster.
func forceRemove(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	claims := &v1.NodeClaimList{}
	nodes := &corev1.NodeList{}
	pools := &v1.NodePoolList{}
	_ = testEnv.Client.List(ctx, claims)
	_ = testEnv.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey})
	_ = testEnv.Client.List(ctx, pools)
	var objs []client.Object
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	for i := range pools.Items {
		objs = append(objs, &pools.Items[i])
	}
	for _, obj := range append(objs, karpenterNodeClass()) {
		if len(obj.GetFinalizers()) > 0 {
			_ = testEnv.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}
		_ = testEnv.Client.Delete(ctx, obj)
	}
}

// deployment is one pause pod requesting cpu, pinned to the machine's node
// when one is given.
func deployment(ns, name string, on machine, cpu string) *appsv1.Deployment {
	d := workloads.Deployment(ns, name, 1, cpu, "")
	if on.claim != nil {
		// The pod's pool, not its node: after the node goes, the pod
		// needs a new node of the same pool.
		d.Spec.Template.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: on.claim.Labels[v1.NodePoolLabelKey]}
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{on.claim.Name},
				}}},
			}},
		}}
	}
	return d
}

func isDisruptedTaint(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey }

// claimWatch records the NodeClaims created (after it started) and deleted,
// with when each deletion was first seen, by polling the API server.
type claimWatch struct {
	mu      sync.Mutex
	known   map[string]bool
	added   []string
	removed map[string]time.Time
}

// watchClaims starts a claimWatch that polls every 100 ms until the test ends.
func watchClaims(t *testing.T) *claimWatch {
	t.Helper()
	w := &claimWatch{known: map[string]bool{}, removed: map[string]time.Time{}}
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(context.Background(), list); err != nil {
		t.Fatalf("listing NodeClaims: %v", err)
	}
	for _, nc := range list.Items {
		w.known[nc.Name] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			list := &v1.NodeClaimList{}
			if err := testEnv.Client.List(ctx, list); err != nil {
				continue
			}
			w.observe(list.Items)
		}
	}()
	return w
}

// observe records one listing.
func (w *claimWatch) observe(items []v1.NodeClaim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	present := map[string]bool{}
	for _, nc := range items {
		present[nc.Name] = true
		if !w.known[nc.Name] {
			w.known[nc.Name] = true
			w.added = append(w.added, nc.Name)
		}
		if _, seen := w.removed[nc.Name]; nc.DeletionTimestamp != nil && !seen {
			w.removed[nc.Name] = nc.DeletionTimestamp.Time
		}
	}
	for name := range w.known {
		if _, seen := w.removed[name]; !present[name] && !seen {
			w.removed[name] = now
		}
	}
}

func (w *claimWatch) created() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.added)
}

func (w *claimWatch) deleted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name := range w.removed {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// deletedAt is when the NodeClaim's deletion began.
func (w *claimWatch) deletedAt(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.removed[name]
}
