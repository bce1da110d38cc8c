package autoscaling_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// dovetail is the controller a test runs; restart replaces it.
type dovetail struct {
	controller *localcluster.Controller
}

// restart stops the controller and starts a new one.
func (d *dovetail) restart(t *testing.T) {
	t.Helper()
	if err := stop(d.controller); err != nil {
		t.Fatalf("stopping the controller: %v", err)
	}
	d.controller = run(t)
}

// startDovetail creates the default KWOKNodeClass (and the given NodePool,
// or the default one) and runs the Dovetail controller until the test ends,
// then removes everything the test launched.
func startDovetail(t *testing.T, pool *v1.NodePool) *dovetail {
	t.Helper()
	ctx := context.Background()
	if pool == nil {
		pool = localcluster.DefaultNodePool()
	}
	removeAtEnd(t, localcluster.DefaultNodeClass(), pool)
	for _, obj := range []client.Object{localcluster.DefaultNodeClass(), pool} {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", env.Describe(obj), err)
		}
	}
	d := &dovetail{controller: run(t)}
	t.Cleanup(func() { teardown(t, d.controller) })
	return d
}

// informed returns the object of an informer notification, unwrapping the
// tombstone a delete can arrive as; false for an object of another type.
func informed[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	out, ok := obj.(T)
	return out, ok
}

// removeAtEnd deletes the objects when the test ends, whatever happened:
// a test that fails before its controller starts must not leave the next
// test a NodeClass or NodePool that already exists.
func removeAtEnd(t *testing.T, objs ...client.Object) {
	t.Cleanup(func() {
		for _, obj := range objs {
			_ = testEnv.Client.Delete(context.Background(), obj.DeepCopyObject().(client.Object))
		}
	})
}

// run starts a controller (fast batching for tests), with the given
// changes to its options, and returns it.
func run(t *testing.T, configure ...func(*operator.Options)) *localcluster.Controller {
	t.Helper()
	opts := localcluster.OperatorOptions()
	opts.BatchIdleDuration = 500 * time.Millisecond
	opts.BatchMaxDuration = 3 * time.Second
	opts.LogWriter = testlog.Writer(t)
	// These tests start several controllers in one process, and the
	// conversion webhook's certificate rotator registers a controller under
	// a fixed name; conversion has its own tests (test/integration/conversion).
	opts.DisableWebhook = true
	for _, c := range configure {
		c(&opts)
	}
	cluster := &localcluster.Cluster{ControlPlane: testEnv.ControlPlane, Client: testEnv.Client}
	controller, err := cluster.StartController(context.Background(), opts, compose.KwokOptions{})
	if err != nil {
		t.Fatalf("starting the Dovetail controller: %v", err)
	}
	return controller
}

// teardown deletes the test's namespaces and NodePools, waits until their
// pods are gone and the controller has drained and removed every NodeClaim
// and Node it launched, and stops it. Waiting for the pods matters: a pod
// still pending in a terminating namespace would make the next test's
// controller launch a node for it.
func teardown(t *testing.T, controller *localcluster.Controller) {
	t.Helper()
	ctx := context.Background()
	// Stop the controller even when a wait below fails the test: one left
	// running would launch nodes for the next test's pods.
	defer func() {
		if err := stop(controller); err != nil {
			t.Errorf("controller stopped with error: %v", err)
		}
	}()
	testEnv.DeleteTestNamespaces(t, 2*time.Minute)
	pools := &v1.NodePoolList{}
	if err := testEnv.Client.List(ctx, pools); err == nil {
		for i := range pools.Items {
			_ = testEnv.Client.Delete(ctx, &pools.Items[i])
		}
	}
	claims := &v1.NodeClaimList{}
	if err := testEnv.Client.List(ctx, claims); err == nil {
		for i := range claims.Items {
			_ = testEnv.Client.Delete(ctx, &claims.Items[i])
		}
	}
	env.Eventually(t, 2*time.Minute, "every NodeClaim and Dovetail node to be gone", func(ctx context.Context) (bool, error) {
		if err := testEnv.Client.List(ctx, claims); err != nil {
			return false, err
		}
		nodes := &corev1.NodeList{}
		if err := testEnv.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
	_ = testEnv.Client.Delete(ctx, localcluster.DefaultNodeClass())
}

// stop stops the controller. A stop that hangs dumps the goroutines to
// stderr while it still hangs (the manager gives up after its 30 s grace
// period, by which time the culprit may be gone), to show what is stuck.
func stop(controller *localcluster.Controller) error {
	timer := time.AfterFunc(20*time.Second, func() { _ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1) })
	defer timer.Stop()
	return controller.Stop()
}

// runningPods lists the app's Running pods, with the nodes they run on.
func runningPods(ctx context.Context, ns, app string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := testEnv.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	return running, nil
}

// waitRunning waits until n pods of the app are Running.
func waitRunning(t *testing.T, ns, app string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	env.Eventually(t, timeout, fmt.Sprintf("%d %s pods Running", n, app), func(ctx context.Context) (bool, error) {
		var err error
		pods, err = runningPods(ctx, ns, app)
		return len(pods) == n, err
	})
	return pods
}

// nodesOf returns the nodes the pods run on, by name.
func nodesOf(t *testing.T, pods []corev1.Pod) map[string]*corev1.Node {
	t.Helper()
	out := map[string]*corev1.Node{}
	for _, p := range pods {
		if _, ok := out[p.Spec.NodeName]; ok {
			continue
		}
		node := &corev1.Node{}
		if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatalf("reading node %s: %v", p.Spec.NodeName, err)
		}
		out[node.Name] = node
	}
	return out
}

func nodeClaims(t *testing.T) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := testEnv.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", env.Describe(obj), err)
	}
}
