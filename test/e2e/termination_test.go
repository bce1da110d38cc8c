package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// terminationTestTaint keeps other tests' pods off this test's nodes.
const terminationTestTaint = "termination.dovetail.test/dedicated"

// TestTerminationDrainsNodeWithinPDB deletes a kwok node running a
// Deployment guarded by a PDB (minAvailable = replicas - 1): the termination
// controllers taint and drain it while the real scheduler moves the pods to
// the second node, availability never drops below minAvailable (watched
// event by event), and the finalizers go once the instance is terminated at
// the provider.
func TestTerminationDrainsNodeWithinPDB(t *testing.T) {
	const replicas = 4
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	ns := testEnv.Namespace(t)
	cloud := fake.NewCloudProvider()
	cloud.InstanceTypes = fake.InstanceTypes(1)
	startTerminationControllers(ctx, t, &running, cloud)

	first, firstClaim := createTerminationNode(ctx, t, cloud, ns+"-first")
	labels := map[string]string{"app": "drain-" + ns}
	createDeploymentWithPDB(ctx, t, ns, labels, replicas)
	available := watchAvailable(ctx, t, &running, ns, labels)
	terminationEventually(t, fmt.Sprintf("%d available pods on %s", replicas, first.Name), func(context.Context) (bool, error) {
		return available.current() == replicas, nil
	})
	second, secondClaim := createTerminationNode(ctx, t, cloud, ns+"-second")

	available.resetMinimum()
	if err := testEnv.Client.Delete(ctx, first); err != nil {
		t.Fatalf("deleting node: %v", err)
	}
	terminationEventually(t, "the first node and its NodeClaim to be gone", func(ctx context.Context) (bool, error) {
		nodeGone, err := terminationGone(ctx, first)
		if err != nil {
			return false, err
		}
		claimGone, err := terminationGone(ctx, firstClaim)
		return nodeGone && claimGone, err
	})
	terminationEventually(t, fmt.Sprintf("%d available pods on %s", replicas, second.Name), func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := testEnv.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		onSecond := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == second.Name && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				onSecond++
			}
		}
		return onSecond == replicas && available.current() == replicas, nil
	})

	t.Logf("available replicas during the drain: at least %d of %d", available.minimum(), replicas)
	if got, want := available.minimum(), replicas-1; got < want {
		t.Errorf("available replicas dropped to %d during the drain, below minAvailable %d", got, want)
	}
	instances, err := cloud.List(ctx)
	if err != nil {
		t.Fatalf("listing instances: %v", err)
	}
	var ids []string
	for _, i := range instances {
		ids = append(ids, i.Status.ProviderID)
	}
	if want := []string{secondClaim.Status.ProviderID}; !slices.Equal(ids, want) {
		t.Errorf("instances at the provider = %v, want only the second node's %v", ids, want)
	}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatalf("getting second node: %v", err)
	}
	if slices.ContainsFunc(second.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey }) {
		t.Errorf("second node was tainted: %v", second.Spec.Taints)
	}
}

// startTerminationControllers runs the eviction queue and both termination
// controllers in a manager, wired as the composition root does.
func startTerminationControllers(ctx context.Context, t *testing.T, running *sync.WaitGroup, cloud *fake.CloudProvider) {
	t.Helper()
	mgr, err := manager.New(testEnv.ControlPlane.RESTConfig, manager.Options{
		Scheme:                 testEnv.Scheme,
		Logger:                 testlog.Logger(t, 1),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             operator.ControllerConfig(true),
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	if err := indexes.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatalf("indexing fields: %v", err)
	}
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatalf("creating metrics: %v", err)
	}
	clk, recorder := clock.RealClock{}, terminationRecorder{}
	queue := eviction.NewQueue(clk, mgr.GetClient(), recorder, m)
	for _, c := range []interface {
		Register(context.Context, manager.Manager) error
	}{
		queue,
		termination.NewNodeController(clk, mgr.GetClient(), cloud, recorder, m, queue),
		termination.NewNodeClaimController(clk, mgr.GetClient(), cloud, recorder, m),
	} {
		if err := c.Register(ctx, mgr); err != nil {
			t.Fatalf("registering: %v", err)
		}
	}
	running.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("running manager: %v", err)
		}
	})
}

// terminationRecorder discards events: the test asserts on cluster state.
type terminationRecorder struct{}

func (terminationRecorder) Publish(...events.Event) {}

// createTerminationNode launches an instance at the fake provider and
// creates its NodeClaim and a kwok Node for it, with the termination
// finalizer, and waits until kwok reports the node Ready.
func createTerminationNode(ctx context.Context, t *testing.T, cloud *fake.CloudProvider, name string) (*corev1.Node, *v1.NodeClaim) {
	t.Helper()
	gvk := fake.NodeClassGVK()
	nodeClaim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer}, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: gvk.Group, Kind: gvk.Kind, Name: "default"},
		}},
	}
	if err := testEnv.Client.Create(ctx, nodeClaim); err != nil {
		t.Fatalf("creating nodeclaim: %v", err)
	}
	launched, err := cloud.Create(ctx, nodeClaim)
	if err != nil {
		t.Fatalf("launching: %v", err)
	}
	nodeClaim.Status.ProviderID = launched.Status.ProviderID
	if err := testEnv.Client.Status().Update(ctx, nodeClaim); err != nil {
		t.Fatalf("recording provider ID: %v", err)
	}
	resources := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{controlplane.KwokNodeAnnotationKey: controlplane.KwokNodeAnnotationValue},
			Labels:      map[string]string{corev1.LabelHostname: name, terminationTestTaint: "true", v1.NodePoolLabelKey: "default"},
			Finalizers:  []string{v1.TerminationFinalizer},
		},
		Spec:   corev1.NodeSpec{ProviderID: nodeClaim.Status.ProviderID, Taints: []corev1.Taint{{Key: terminationTestTaint, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
	if err := testEnv.Client.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { removeTerminationLeftovers(t, node, nodeClaim) })
	terminationEventually(t, "node "+name+" Ready", func(ctx context.Context) (bool, error) {
		got := &corev1.Node{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			return false, err
		}
		return slices.ContainsFunc(got.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}), nil
	})
	return node, nodeClaim
}

// removeTerminationLeftovers deletes what a failed run left behind,
// finalizers and all.
func removeTerminationLeftovers(t *testing.T, objs ...client.Object) {
	ctx := context.Background()
	for _, obj := range objs {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
		if err := testEnv.Client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
			t.Errorf("removing finalizers of %s: %v", obj.GetName(), err)
		}
		if err := testEnv.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %s: %v", obj.GetName(), err)
		}
	}
}

func createDeploymentWithPDB(ctx context.Context, t *testing.T, ns string, labels map[string]string, replicas int32) {
	t.Helper()
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "drain", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{terminationTestTaint: "true"},
					Tolerations:  []corev1.Toleration{{Key: terminationTestTaint, Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "drain", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(replicas - 1)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	for _, obj := range []client.Object{pdb, deployment} {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// availability counts the Ready, non-terminating pods of a workload after
// every watch event, remembering the lowest count seen.
type availability struct {
	mu     sync.Mutex
	ready  map[string]bool
	count  int
	lowest int
}

func (a *availability) observe(pod *corev1.Pod, gone bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ready[pod.Name] = !gone && pod.DeletionTimestamp == nil && slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
	a.count = 0
	for _, r := range a.ready {
		if r {
			a.count++
		}
	}
	a.lowest = min(a.lowest, a.count)
}

func (a *availability) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

func (a *availability) minimum() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lowest
}

func (a *availability) resetMinimum() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lowest = a.count
}

// watchAvailable follows the workload's pods through an informer. Its
// handler sees every event in order, so no dip in availability is missed.
func watchAvailable(ctx context.Context, t *testing.T, running *sync.WaitGroup, ns string, labels map[string]string) *availability {
	t.Helper()
	a := &availability{ready: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(testEnv.Clientset, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})
		}))
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { a.observe(o.(*corev1.Pod), false) },
		UpdateFunc: func(_, o any) { a.observe(o.(*corev1.Pod), false) },
		DeleteFunc: func(o any) {
			if tombstone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = tombstone.Obj
			}
			if pod, ok := o.(*corev1.Pod); ok {
				a.observe(pod, true)
			}
		},
	}); err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	running.Go(func() { informer.Run(ctx.Done()) })
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	return a
}

func terminationGone(ctx context.Context, obj client.Object) (bool, error) {
	err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// terminationEventually polls condition every 100ms for up to three
// minutes, failing the test with what was awaited when the deadline passes.
func terminationEventually(t *testing.T, what string, condition wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, condition); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
