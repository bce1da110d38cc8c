package bench

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/controllerprocess"
)

// podClock records, client-side, when each pod was first seen, first
// marked unschedulable, first seen bound (and to which node) and first
// seen Running.
type podClock struct {
	clock         clock.PassiveClock
	mu            sync.Mutex
	seen          map[types.UID]time.Time
	unschedulable map[types.UID]time.Time
	bound         map[types.UID]time.Time
	nodeOf        map[types.UID]string
	running       map[types.UID]time.Time
}

func watchPods(b *testing.B, cs kubernetes.Interface, ns string) *podClock {
	b.Helper()
	pc := &podClock{clock: clock.RealClock{}, seen: map[types.UID]time.Time{}, unschedulable: map[types.UID]time.Time{},
		bound: map[types.UID]time.Time{}, nodeOf: map[types.UID]string{}, running: map[types.UID]time.Time{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	record := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := pc.clock.Now()
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if _, ok := pc.seen[pod.UID]; !ok {
			pc.seen[pod.UID] = now
		}
		if _, ok := pc.unschedulable[pod.UID]; !ok && podutil.IsProvisionable(pod) {
			pc.unschedulable[pod.UID] = now
		}
		if _, ok := pc.bound[pod.UID]; !ok && pod.Spec.NodeName != "" {
			pc.bound[pod.UID], pc.nodeOf[pod.UID] = now, pod.Spec.NodeName
		}
		if _, ok := pc.running[pod.UID]; !ok && pod.Status.Phase == corev1.PodRunning {
			pc.running[pod.UID] = now
		}
	}
	runInformer(b, factory, factory.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	})
	return pc
}

// unschedulableCount is how many pods the kube-scheduler has marked
// unschedulable.
func (pc *podClock) unschedulableCount() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.unschedulable)
}

func (pc *podClock) counts() (seen, running int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.seen), len(pc.running)
}

// spread returns when the first and last pods were seen and marked
// unschedulable by the kube-scheduler, relative to start.
func (pc *podClock) spread(start time.Time) (firstSeen, lastSeen, firstUnschedulable, lastUnschedulable time.Duration) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	bounds := func(m map[types.UID]time.Time) (time.Duration, time.Duration) {
		var lo, hi time.Duration
		first := true
		for _, t := range m {
			d := t.Sub(start)
			if first || d < lo {
				lo = d
			}
			if first || d > hi {
				hi = d
			}
			first = false
		}
		return lo, hi
	}
	firstSeen, lastSeen = bounds(pc.seen)
	firstUnschedulable, lastUnschedulable = bounds(pc.unschedulable)
	return
}

// pendingTimes returns each pod's time from first seen to Running, sorted,
// and the time the last pod started running.
func (pc *podClock) pendingTimes() ([]time.Duration, time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []time.Duration
	var last time.Time
	for uid, r := range pc.running {
		out = append(out, r.Sub(pc.seen[uid]))
		if r.After(last) {
			last = r
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, last
}

// BenchmarkScaleOut1000 creates a Deployment of 1,000 pods (500m CPU, 512Mi
// each) on an empty cluster and measures the time until all are Running,
// each pod's pending time, and the controller's CPU and peak memory; then
// the floor: the same Deployment created again while its nodes are still
// there (see scaleOut).
func BenchmarkScaleOut1000(b *testing.B) { scaleOut(b, 1000) }

// BenchmarkScaleOut5000 is BenchmarkScaleOut1000 with 5,000 pods.
func BenchmarkScaleOut5000(b *testing.B) { scaleOut(b, 5000) }

// BenchmarkScaleOut10000 is BenchmarkScaleOut1000 with 10,000 pods.
func BenchmarkScaleOut10000(b *testing.B) { scaleOut(b, 10000) }

// scaleOut measures one scale-out of replicas pods and its floor. The floor
// is the time the kube-scheduler and kwok take to bind and start the same
// pods on nodes that already exist: after the scale-out the controller is
// stopped (its CPU and peak RSS are read then), the Deployment deleted, and,
// once its pods are gone, created again in another namespace, timed the
// same way. The ratio of the two is what provisioning costs over what is
// physically possible on this control plane.
func scaleOut(b *testing.B, replicas int32) {
	for range b.N {
		ctx := context.Background()
		cluster, cs, start := setUp(b, replicas)
		controller := start()

		nodeTimes := watchNodes(b, cs)
		b.ResetTimer()
		scale := runDeployment(b, cluster, cs, "bench", replicas)
		b.StopTimer()
		timeline(b, cluster, scale.start)
		used := controller.Stop()
		nodes, cost := fleet(b, cluster)

		// The floor: the same pods again on the nodes that are there now.
		old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: "bench"}}
		if err := cluster.Client.Delete(ctx, old); err != nil {
			b.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 0, nil
		})
		if err != nil {
			b.Fatalf("waiting for the scale-out's pods to go: %v", err)
		}
		floor := runDeployment(b, cluster, cs, "floor", replicas)
		if after, _ := fleet(b, cluster); after != nodes {
			b.Fatalf("the floor ran on %d nodes, the scale-out on %d: the floor must not launch", after, nodes)
		}
		ratio := scale.allRunning.Seconds() / floor.allRunning.Seconds()
		scaleStages, floorStages := stagesOf(scale.start, scale.pods, nodeTimes), stagesOf(floor.start, floor.pods, nodeTimes)
		b.Logf("scale-out stages: %s", scaleStages)
		b.Logf("floor stages: %s", floorStages)

		b.ReportMetric(scale.allRunning.Seconds(), "s-to-all-running")
		b.ReportMetric(floor.allRunning.Seconds(), "s-floor")
		b.ReportMetric(ratio, "floor-ratio")
		b.ReportMetric(percentile(scale.pending, 0.50).Seconds(), "s-p50-pending")
		b.ReportMetric(percentile(scale.pending, 0.99).Seconds(), "s-p99-pending")
		b.ReportMetric(percentile(scaleStages.waitForNode, 0.50).Seconds(), "s-p50-wait-for-node")
		b.ReportMetric(percentile(scaleStages.waitForScheduler, 0.50).Seconds(), "s-p50-wait-for-scheduler")
		b.ReportMetric(percentile(scaleStages.waitForScheduler, 0.99).Seconds(), "s-p99-wait-for-scheduler")
		b.ReportMetric(percentile(floorStages.waitForScheduler, 0.50).Seconds(), "s-p50-floor-wait-for-scheduler")
		b.ReportMetric(used.CPUSeconds, "controller-cpu-s")
		b.ReportMetric(used.PeakRSSMB, "controller-peak-rss-MB")
		b.ReportMetric(float64(nodes), "nodes")
		b.ReportMetric(cost, "$/h")
		b.Logf("%d pods Running %s after the Deployment was created (floor %s, ratio %.2f); pending p50 %s, p99 %s (floor p50 %s, p99 %s); controller %.1f CPU-s, peak RSS %.0f MB; %d nodes, $%.2f/h",
			replicas, seconds(scale.allRunning), seconds(floor.allRunning), ratio,
			seconds(percentile(scale.pending, 0.5)), seconds(percentile(scale.pending, 0.99)),
			seconds(percentile(floor.pending, 0.5)), seconds(percentile(floor.pending, 0.99)),
			used.CPUSeconds, used.PeakRSSMB, nodes, cost)
	}
}

// setUp builds the controller, starts the local cluster, and returns it,
// a clientset on it, and start, which runs a controller process with
// production defaults and waits until the default NodePool is Ready, its
// cpu limit raised for replicas pods.
func setUp(b *testing.B, replicas int32) (*localcluster.Cluster, kubernetes.Interface, func() *controllerprocess.Process) {
	b.Helper()
	dir := b.TempDir()
	bin := controllerprocess.Build(b, dir)
	cluster := startCluster(b)
	cs, err := kubernetes.NewForConfig(cluster.ControlPlane.RESTConfig)
	if err != nil {
		b.Fatal(err)
	}
	start := func() *controllerprocess.Process {
		controller := startController(b, bin, cluster, dir)
		waitForReadyNodePool(b, cluster)
		raiseCPULimit(b, cluster, replicas)
		return controller
	}
	return cluster, cs, start
}

// raiseCPULimit lifts the default NodePool's cpu limit (1,000) to a cpu per
// pod, so that the 5,000-pod scale-out (2,500 cpu of requests) is not cut
// short by it.
func raiseCPULimit(b *testing.B, cluster *localcluster.Cluster, replicas int32) {
	b.Helper()
	pool := localcluster.DefaultNodePool()
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pool), pool); err != nil {
		b.Fatal(err)
	}
	stored := pool.DeepCopy()
	pool.Spec.Limits = v1.Limits{corev1.ResourceCPU: *resource.NewQuantity(int64(max(replicas, 1000)), resource.DecimalSI)}
	if err := cluster.Client.Patch(context.Background(), pool, client.MergeFrom(stored)); err != nil {
		b.Fatalf("raising the default NodePool's cpu limit: %v", err)
	}
}

// run is one timed Deployment: when it was created, how long until its
// last pod ran, each pod's time from first seen to Running, sorted, and
// what was recorded of its pods.
type run struct {
	start      time.Time
	allRunning time.Duration
	pending    []time.Duration
	pods       *podClock
}

// runDeployment creates the inflate Deployment of replicas pods in a new
// namespace ns and waits until every pod is Running.
func runDeployment(b *testing.B, cluster *localcluster.Cluster, cs kubernetes.Interface, ns string, replicas int32) run {
	b.Helper()
	ctx := context.Background()
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	pods := watchPods(b, cs, ns)
	start := clock.RealClock{}.Now()
	if err := cluster.Client.Create(ctx, inflate(ns, replicas)); err != nil {
		b.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Minute, true, func(context.Context) (bool, error) {
		_, running := pods.counts()
		return running >= int(replicas), nil
	})
	if err != nil {
		_, running := pods.counts()
		b.Fatalf("waiting for %d pods to run in %s (%d running): %v", replicas, ns, running, err)
	}
	pending, last := pods.pendingTimes()
	fs, ls, fu, lu := pods.spread(start)
	b.Logf("%s: pods created between %s and %s, marked unschedulable between %s and %s", ns, seconds(fs), seconds(ls), seconds(fu), seconds(lu))
	return run{start: start, allRunning: last.Sub(start), pending: pending, pods: pods}
}

func inflate(ns string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "inflate"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
						}}}},
				},
			},
		},
	}
}

// waitForReadyNodePool waits until the controller has marked the default NodePool Ready.
func waitForReadyNodePool(b *testing.B, cluster *localcluster.Cluster) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pool := localcluster.DefaultNodePool()
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		return meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionTypeReady), nil
	})
	if err != nil {
		b.Fatalf("waiting for the default NodePool to be Ready: %v", err)
	}
}

// fleet counts Dovetail's nodes and their hourly cost.
func fleet(b *testing.B, cluster *localcluster.Cluster) (int, float64) {
	b.Helper()
	prices, err := catalog.LoadPrices(catalog.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := cluster.Client.List(context.Background(), nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		b.Fatal(err)
	}
	cost := 0.0
	for _, n := range nodes.Items {
		cost += prices.OfLabels(n.Labels)
	}
	return len(nodes.Items), cost
}

// timeline logs when NodeClaims were created and initialized, relative to
// start (API timestamps have one-second resolution).
func timeline(b *testing.B, cluster *localcluster.Cluster, start time.Time) {
	b.Helper()
	claims := &v1.NodeClaimList{}
	if err := cluster.Client.List(context.Background(), claims); err != nil {
		b.Fatal(err)
	}
	var created, initialized []time.Duration
	for _, nc := range claims.Items {
		created = append(created, nc.CreationTimestamp.Sub(start))
		if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeInitialized); c != nil && c.Status == metav1.ConditionTrue {
			initialized = append(initialized, c.LastTransitionTime.Sub(start))
		}
	}
	sort.Slice(created, func(i, j int) bool { return created[i] < created[j] })
	sort.Slice(initialized, func(i, j int) bool { return initialized[i] < initialized[j] })
	if len(created) == 0 || len(initialized) == 0 {
		return
	}
	b.Logf("timeline: %d NodeClaims created between %s and %s; initialized between %s and %s",
		len(created), seconds(created[0]), seconds(created[len(created)-1]), seconds(initialized[0]), seconds(initialized[len(initialized)-1]))
}
