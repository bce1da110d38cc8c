package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// pdbMinAvailable is the inflate Deployment's PodDisruptionBudget during the
// scale-down benchmark: at most a tenth of the replicas may be disrupted at
// once.
var pdbMinAvailable = intstr.FromString("90%")

// quietPeriod is how long nothing may change (no NodeClaim created or
// deleted, no node tainted karpenter.sh/disrupted) before consolidation is
// taken to have converged. It covers the longest wait the controller has
// between one command and the next decision it could carry out: the 20 s
// nomination window that shields a replacement, the 10 s poll period and the
// 15 s validation delay (45 s), with a margin.
const quietPeriod = 60 * time.Second

// convergeDeadline bounds the whole consolidation after the scale-down.
const convergeDeadline = 30 * time.Minute

// BenchmarkScaleDown1000 scales the inflate Deployment (1,000 pods of 500m
// CPU and 512Mi, under a PodDisruptionBudget of minAvailable 90%) out on an
// empty cluster, then down to a third, and measures consolidation on the
// real control plane until it converges: the time, the converged $/h
// against a fresh plan's $/h for the remaining pods, the pod evictions
// against the fewest that reach the same nodes, and the fewest available
// replicas seen (see scaleDown).
func BenchmarkScaleDown1000(b *testing.B) { scaleDown(b, 1000) }

// BenchmarkScaleDown3000 is BenchmarkScaleDown1000 with 3,000 pods.
func BenchmarkScaleDown3000(b *testing.B) { scaleDown(b, 3000) }

// scaleDown is one scale-out of replicas pods, a scale-down to a third and
// the consolidation that follows, with the controller's production defaults
// except the default NodePool's consolidateAfter, set to 0s before the
// scale-down so that nodes are consolidatable as soon as their pods go (its
// disruption budget stays the default 10% of nodes).
//
// Consolidation has converged when, with the scale-down done and no pod of
// the Deployment pending, no NodeClaim has been created or deleted and no
// node tainted for disruption for quietPeriod; the time to converge is from
// the scale-down to the last such change. Reported:
//
//   - cost-ratio: the converged nodes' $/h (each node's offering price, as
//     in the scale-out benchmarks) divided by the $/h of a fresh plan for
//     the remaining pods: the simulator, in this process, placing them
//     pending on an empty cluster with the same NodePool and the kwok
//     provider's instance types, as the controller process has them.
//   - evictions: pods of the Deployment that were deleted (marked for
//     deletion) while Running after the scale-down settled (as many pods as
//     the new replica count, none terminating): with the Deployment not
//     scaled again, only draining deletes them. The Evicted events the
//     controller published on the namespace's pods are counted as a check.
//     fewest-evictions: the pods that were, when the scale-down settled, on
//     a node absent at convergence; every sequence of commands ending with
//     those nodes evicts each at least once, and eviction-ratio divides the
//     two. evictions-of-replacements: the evicted pods that were themselves
//     created after the scale-down settled (replacements of evicted pods),
//     the pods moved more than once.
//   - min-available: the fewest pods of the Deployment Running, Ready and
//     not terminating at any point of the pod watch after the scale-down
//     settled; the benchmark fails if it goes below the
//     PodDisruptionBudget's desiredHealthy.
func scaleDown(b *testing.B, replicas int32) {
	for range b.N {
		ctx := context.Background()
		cluster, cs, start := setUp(b, replicas)
		controller := start()

		out := runDeployment(b, cluster, cs, "bench", replicas)
		b.Logf("scale-out: %d pods Running %s after the Deployment was created", replicas, seconds(out.allRunning))
		pdb := createPDB(b, cluster, "bench", replicas)
		setConsolidateAfter(b, cluster, "0s")
		nodesBefore, costBefore := fleet(b, cluster)

		target := replicas / 3
		pods := trackPods(b, cs, "bench", target, replicas)
		changes := &fleetChanges{}
		b.ResetTimer()
		scaledAt := clock.RealClock{}.Now()
		changes.last = scaledAt
		pods.arm()
		scaleDeployment(b, cluster, "bench", target)
		err := wait.PollUntilContextTimeout(ctx, time.Second, convergeDeadline, true, func(ctx context.Context) (bool, error) {
			now := clock.RealClock{}.Now()
			if err := changes.observe(ctx, cluster, now); err != nil {
				b.Logf("observing the fleet: %v", err)
				return false, nil
			}
			settled, pending := pods.state()
			return settled && pending == 0 && changes.disrupting == 0 && now.Sub(changes.last) >= quietPeriod, nil
		})
		b.StopTimer()
		if err != nil {
			settled, pending := pods.state()
			b.Fatalf("consolidation did not converge within %s (scale-down settled %t, %d pods pending, %d nodes disrupting, last change %s after the scale-down): %v",
				convergeDeadline, settled, pending, changes.disrupting, seconds(changes.last.Sub(scaledAt)), err)
		}
		converged := changes.last.Sub(scaledAt)
		used := controller.Stop()

		nodesAfter, costAfter := fleet(b, cluster)
		remaining := remainingNodes(b, cluster)
		ev := pods.summary(remaining)
		events := evictedEvents(b, cs, "bench")
		desired := pdbDesiredHealthy(b, cluster, pdb)
		if ev.minAvailable < int(desired) {
			b.Errorf("%d replicas available at the lowest during consolidation, below the PodDisruptionBudget's desiredHealthy %d", ev.minAvailable, desired)
		}
		fresh := freshPlan(b, cluster, cs, "bench")
		if len(fresh.Unschedulable) > 0 {
			b.Fatalf("fresh plan: %d of the remaining pods unschedulable", len(fresh.Unschedulable))
		}
		ratio := costAfter / fresh.Cost()
		evictionRatio := 1.0
		if ev.fewest > 0 {
			evictionRatio = float64(ev.evicted) / float64(ev.fewest)
		}
		logLayouts(b, cluster, cs, "bench", fresh)

		b.ReportMetric(converged.Seconds(), "s-to-converge")
		b.ReportMetric(float64(nodesBefore), "nodes-before")
		b.ReportMetric(float64(nodesAfter), "nodes-converged")
		b.ReportMetric(float64(len(fresh.NewNodeClaims)), "nodes-fresh")
		b.ReportMetric(costBefore, "$/h-before")
		b.ReportMetric(costAfter, "$/h-converged")
		b.ReportMetric(fresh.Cost(), "$/h-fresh")
		b.ReportMetric(ratio, "cost-ratio")
		b.ReportMetric(float64(ev.evicted), "evictions")
		b.ReportMetric(float64(ev.again), "evictions-of-replacements")
		b.ReportMetric(float64(ev.fewest), "fewest-evictions")
		b.ReportMetric(evictionRatio, "eviction-ratio")
		b.ReportMetric(float64(ev.minAvailable), "min-available")
		b.ReportMetric(used.CPUSeconds, "controller-cpu-s")
		b.ReportMetric(used.PeakRSSMB, "controller-peak-rss-MB")
		b.Logf("%d → %d pods: scale-down settled %s after it was issued, consolidation converged %s after it (last NodeClaim created or deleted, node tainted); %d → %d nodes (fresh plan %d), $%.2f/h → $%.2f/h against the fresh plan's $%.2f/h (ratio %.3f); %d evictions (%d Evicted events; %d of them of replacement pods), fewest %d (ratio %.3f); %d of the %d replacement pods first bound to a node that consolidation then removed; min %d available under the PDB's desiredHealthy %d; controller %.1f CPU-s, peak RSS %.0f MB",
			replicas, target, seconds(ev.settledAt.Sub(scaledAt)), seconds(converged), nodesBefore, nodesAfter, len(fresh.NewNodeClaims),
			costBefore, costAfter, fresh.Cost(), ratio, ev.evicted, events, ev.again, ev.fewest, evictionRatio, ev.doomed, ev.replacements, ev.minAvailable, desired,
			used.CPUSeconds, used.PeakRSSMB)
	}
}

// createPDB creates the inflate Deployment's PodDisruptionBudget in ns and
// waits until the kube-controller-manager has computed its status for the
// replicas pods.
func createPDB(b *testing.B, cluster *localcluster.Cluster, ns string, replicas int32) *policyv1.PodDisruptionBudget {
	b.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(pdbMinAvailable),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inflate"}},
		},
	}
	if err := cluster.Client.Create(ctx, pdb); err != nil {
		b.Fatalf("creating the PodDisruptionBudget: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		return pdb.Status.ObservedGeneration >= pdb.Generation && pdb.Status.ExpectedPods == replicas, nil
	})
	if err != nil {
		b.Fatalf("waiting for the PodDisruptionBudget's status (expected pods %d, want %d): %v", pdb.Status.ExpectedPods, replicas, err)
	}
	return pdb
}

// pdbDesiredHealthy is the PodDisruptionBudget's desiredHealthy once the
// kube-controller-manager has seen the scaled-down Deployment.
func pdbDesiredHealthy(b *testing.B, cluster *localcluster.Cluster, pdb *policyv1.PodDisruptionBudget) int32 {
	b.Helper()
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pdb), pdb); err != nil {
		b.Fatalf("reading the PodDisruptionBudget: %v", err)
	}
	return pdb.Status.DesiredHealthy
}

// setConsolidateAfter sets the default NodePool's consolidateAfter.
func setConsolidateAfter(b *testing.B, cluster *localcluster.Cluster, after string) {
	b.Helper()
	pool := localcluster.DefaultNodePool()
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pool), pool); err != nil {
		b.Fatal(err)
	}
	stored := pool.DeepCopy()
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(after)
	if err := cluster.Client.Patch(context.Background(), pool, client.MergeFrom(stored)); err != nil {
		b.Fatalf("setting the default NodePool's consolidateAfter to %s: %v", after, err)
	}
}

// scaleDeployment sets the inflate Deployment's replicas in ns.
func scaleDeployment(b *testing.B, cluster *localcluster.Cluster, ns string, replicas int32) {
	b.Helper()
	d := &appsv1.Deployment{}
	if err := cluster.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "inflate"}, d); err != nil {
		b.Fatal(err)
	}
	stored := d.DeepCopy()
	d.Spec.Replicas = ptr.To(replicas)
	if err := cluster.Client.Patch(context.Background(), d, client.MergeFrom(stored)); err != nil {
		b.Fatalf("scaling the inflate Deployment to %d: %v", replicas, err)
	}
}

// fleetChanges remembers the NodeClaims and the nodes being disrupted of the
// last observation, and when either last changed.
type fleetChanges struct {
	signature  string
	last       time.Time
	disrupting int
}

// observe lists the NodeClaims and Nodes and moves last to now if the set
// of NodeClaims, the ones being deleted or the nodes tainted
// karpenter.sh/disrupted differ from the previous observation.
func (f *fleetChanges) observe(ctx context.Context, cluster *localcluster.Cluster, now time.Time) error {
	claims := &v1.NodeClaimList{}
	if err := cluster.Client.List(ctx, claims); err != nil {
		return fmt.Errorf("listing NodeClaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := cluster.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var parts []string
	disrupting := 0
	for _, nc := range claims.Items {
		if nc.DeletionTimestamp != nil {
			parts = append(parts, nc.Name+"(deleting)")
			disrupting++
			continue
		}
		parts = append(parts, nc.Name)
	}
	for _, n := range nodes.Items {
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey }) {
			parts = append(parts, n.Name+"(tainted)")
			disrupting++
		}
	}
	sort.Strings(parts)
	signature := strings.Join(parts, ",")
	if signature != f.signature {
		f.signature, f.last = signature, now
	}
	f.disrupting = disrupting
	return nil
}

// remainingNodes is the set of Dovetail's nodes' names.
func remainingNodes(b *testing.B, cluster *localcluster.Cluster) map[string]bool {
	b.Helper()
	nodes := &corev1.NodeList{}
	if err := cluster.Client.List(context.Background(), nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		b.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range nodes.Items {
		out[n.Name] = true
	}
	return out
}

// podTracker follows a Deployment's pods from the scale-down on. Until the
// scale-down settles (target pods, none terminating) it only counts; from
// then on it records where each pod was at that moment, counts the pods
// marked for deletion while Running, and the fewest available pods.
type podTracker struct {
	target int
	clock  clock.PassiveClock

	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
	// armed is set by arm, when the scale-down is issued: the scale-down
	// can only settle after it.
	armed      bool
	settledAt  time.Time
	home       map[types.UID]string
	evicted    map[types.UID]bool
	minAvail   int
	terminated map[types.UID]bool
	// landed is where each pod created after the scale-down settled (a
	// replacement of an evicted pod) was first bound.
	landed map[types.UID]string
}

// trackPods follows the pods of ns, returning once its event handler has
// seen the running ones (the informer's cache is synced before its handler
// has been told of every pod).
func trackPods(b *testing.B, cs kubernetes.Interface, ns string, target, running int32) *podTracker {
	b.Helper()
	pt := &podTracker{target: int(target), clock: clock.RealClock{}, pods: map[types.UID]*corev1.Pod{},
		evicted: map[types.UID]bool{}, terminated: map[types.UID]bool{}, landed: map[types.UID]string{}, minAvail: -1}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	runInformer(b, factory, factory.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pt.update(obj) },
		UpdateFunc: func(_, obj any) { pt.update(obj) },
		DeleteFunc: pt.remove,
	})
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pt.mu.Lock()
		defer pt.mu.Unlock()
		return len(pt.pods) >= int(running), nil
	})
	if err != nil {
		b.Fatalf("waiting for the pod watch to report the %d running pods: %v", running, err)
	}
	return pt
}

func (pt *podTracker) update(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	old := pt.pods[pod.UID]
	pt.pods[pod.UID] = pod
	if _, settledPod := pt.home[pod.UID]; !pt.settledAt.IsZero() && !settledPod && pod.Spec.NodeName != "" && pt.landed[pod.UID] == "" {
		pt.landed[pod.UID] = pod.Spec.NodeName
	}
	if pod.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil) {
		pt.terminated[pod.UID] = true
		if !pt.settledAt.IsZero() && old != nil && old.Status.Phase == corev1.PodRunning {
			pt.evicted[pod.UID] = true
		}
	}
	pt.account()
}

func (pt *podTracker) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	old := pt.pods[pod.UID]
	delete(pt.pods, pod.UID)
	if !pt.terminated[pod.UID] && !pt.settledAt.IsZero() && old != nil && old.Status.Phase == corev1.PodRunning {
		// Deleted without being marked first (no grace period).
		pt.evicted[pod.UID] = true
	}
	pt.terminated[pod.UID] = true
	pt.account()
}

// account settles the scale-down when it is done and updates the fewest
// available pods. The caller holds mu.
func (pt *podTracker) account() {
	live, available := 0, 0
	for _, p := range pt.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if p.Status.Phase == corev1.PodRunning && ready(p) {
			available++
		}
	}
	if pt.settledAt.IsZero() {
		if !pt.armed || live != pt.target || available != pt.target {
			return
		}
		pt.settledAt = pt.clock.Now()
		pt.home = map[types.UID]string{}
		for uid, p := range pt.pods {
			if p.DeletionTimestamp == nil {
				pt.home[uid] = p.Spec.NodeName
			}
		}
	}
	if pt.minAvail < 0 || available < pt.minAvail {
		pt.minAvail = available
	}
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// arm starts looking for the scale-down to settle; call it just before
// scaling down.
func (pt *podTracker) arm() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.armed = true
}

// state reports whether the scale-down has settled and how many live pods
// are not Running.
func (pt *podTracker) state() (settled bool, pending int) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for _, p := range pt.pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodRunning {
			pending++
		}
	}
	return !pt.settledAt.IsZero(), pending
}

// evictionSummary is what podTracker.summary reports.
type evictionSummary struct {
	// evicted are the pods marked for deletion while Running after the
	// scale-down settled; again are those of them that were themselves
	// replacements (created after it settled).
	evicted, again int
	// fewest are the pods that were, when the scale-down settled, on a node
	// absent at the end.
	fewest int
	// replacements are the pods created after the scale-down settled that
	// were bound, and doomed those first bound to a node absent at the end.
	replacements, doomed int
	// minAvailable is the fewest pods Running, Ready and not terminating
	// after the scale-down settled.
	minAvailable int
	settledAt    time.Time
}

// summary reports the evictions against the remaining nodes.
func (pt *podTracker) summary(remaining map[string]bool) evictionSummary {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	s := evictionSummary{evicted: len(pt.evicted), replacements: len(pt.landed), minAvailable: pt.minAvail, settledAt: pt.settledAt}
	for _, node := range pt.home {
		if !remaining[node] {
			s.fewest++
		}
	}
	for uid := range pt.evicted {
		if _, ok := pt.home[uid]; !ok {
			s.again++
		}
	}
	for _, node := range pt.landed {
		if !remaining[node] {
			s.doomed++
		}
	}
	return s
}

// evictedEvents counts the pods in ns with an Evicted event from the
// controller's eviction queue.
func evictedEvents(b *testing.B, cs kubernetes.Interface, ns string) int {
	b.Helper()
	list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + eviction.ReasonEvicted})
	if err != nil {
		b.Fatalf("listing Evicted events: %v", err)
	}
	pods := map[types.UID]bool{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Pod" || e.InvolvedObject.Kind == "" {
			pods[e.InvolvedObject.UID] = true
		}
	}
	return len(pods)
}

// freshPlan is the simulator's plan, in this process, for the Deployment's
// live pods in ns, pending on an empty cluster with the default NodePool as
// stored and the instance types of the kwok provider with its default
// options, as the controller process builds them.
func freshPlan(b *testing.B, cluster *localcluster.Cluster, cs kubernetes.Interface, ns string) *simulator.Plan {
	b.Helper()
	ctx := context.Background()
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp != nil {
			continue
		}
		p := list.Items[i].DeepCopy()
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		pods = append(pods, p)
	}
	pool := localcluster.DefaultNodePool()
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
		b.Fatal(err)
	}
	provider, err := kwok.New(cluster.Client, clock.RealClock{}, kwok.Options{})
	if err != nil {
		b.Fatal(err)
	}
	its, err := provider.GetInstanceTypes(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	daemonSets, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	snapshot := &simulator.Snapshot{Pods: pods, NodePools: []simulator.NodePool{{NodePool: pool, InstanceTypes: its}}}
	for i := range daemonSets.Items {
		snapshot.DaemonSets = append(snapshot.DaemonSets, &daemonSets.Items[i])
	}
	return simulator.Simulate(snapshot, simulator.Options{})
}

// logLayouts logs the converged nodes by instance type and capacity type
// with the cpu their pods request against what they offer, and the fresh
// plan's claims by cheapest type: where a cost ratio above 1 comes from.
func logLayouts(b *testing.B, cluster *localcluster.Cluster, cs kubernetes.Interface, ns string, fresh *simulator.Plan) {
	b.Helper()
	ctx := context.Background()
	nodes := &corev1.NodeList{}
	if err := cluster.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		b.Fatal(err)
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	requested := map[string]int64{}
	podsOn := map[string]int{}
	for _, p := range list.Items {
		for _, c := range p.Spec.Containers {
			requested[p.Spec.NodeName] += c.Resources.Requests.Cpu().MilliValue()
		}
		podsOn[p.Spec.NodeName]++
	}
	byType := map[string]int{}
	var req, alloc int64
	var perNode []string
	for _, n := range nodes.Items {
		key := n.Labels[corev1.LabelInstanceTypeStable] + "/" + n.Labels[v1.CapacityTypeLabelKey]
		byType[key]++
		req += requested[n.Name]
		alloc += n.Status.Allocatable.Cpu().MilliValue()
		perNode = append(perNode, fmt.Sprintf("%s %s %d pods %dm/%dm", n.Name, key, podsOn[n.Name], requested[n.Name], n.Status.Allocatable.Cpu().MilliValue()))
	}
	sort.Strings(perNode)
	b.Logf("converged: %s; cpu requested %.1f%% of allocatable", countsString(byType), 100*float64(req)/float64(max(alloc, 1)))
	b.Logf("converged nodes: %s", strings.Join(perNode, "; "))
	freshTypes := map[string]int{}
	var freshAlloc int64
	for _, c := range fresh.NewNodeClaims {
		freshTypes[c.InstanceTypes[0].Name]++
		alloc := c.InstanceTypes[0].Allocatable()
		freshAlloc += alloc.Cpu().MilliValue()
	}
	b.Logf("fresh plan: %s; cpu requested %.1f%% of allocatable", countsString(freshTypes), 100*float64(req)/float64(max(freshAlloc, 1)))
}

func countsString(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}
