package provisioning_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestLaunchLoopBacksOff is the launch loop Karpenter's users report (one
// pod, hundreds of nodes): every node launched for the pod comes up with a
// taint the NodePool does not declare (as a node's boot scripts may add),
// so the pod never schedules there and each pass sees a reason for one more
// node. Ten minutes of provisioning passes every 10 seconds, on a fake
// clock, must launch only a handful, with events and the backoff metric.
func TestLaunchLoopBacksOff(t *testing.T) {
	cleanup(t)
	clk := clocktesting.NewFakeClock(time.Now())
	cp := fake.NewCloudProvider()
	cp.InstanceTypes = instanceTypes()
	cluster := state.NewCluster(clk).WithAPIReader(testEnv.Client)
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var p *provisioning.Provisioner
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(cluster) {
			if err := c.Register(context.Background(), mgr); err != nil {
				return err
			}
		}
		recorder := events.NewRecorder(mgr.GetEventRecorderFor("dovetail-test"), clock.RealClock{}) //nolint:staticcheck // the operator's core/v1 recorder
		p = provisioning.NewProvisioner(clk, mgr.GetClient(), cluster, cp, recorder, m,
			provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second})
		return nil
	})
	h := &harness{provisioner: p, cluster: cluster, client: mgr.GetClient()}
	ns := testEnv.Namespace(t)
	pool := testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("default").Obj())
	pod := testEnv.CreatePendingPod(t, dtesting.MakePod("stuck").Namespace(ns).Req("cpu", "1").Obj())
	h.waitForPods(t, ns, 1)

	registered := map[string]bool{}
	var launchedAt []time.Duration
	start := clk.Now()
	for clk.Since(start) < 10*time.Minute {
		h.provision(t)
		for _, nc := range h.claims(t) {
			if registered[nc.Name] {
				continue
			}
			launchedAt = append(launchedAt, clk.Since(start))
			registerWithBootTaint(t, &nc)
			registered[nc.Name] = true
		}
		// The model must see every node initialized before the next pass,
		// as it would a few seconds after a real boot.
		env.Eventually(t, 30*time.Second, "nodes initialized in cluster state", func(context.Context) (bool, error) {
			initialized := 0
			for _, n := range cluster.Nodes() {
				// A Node the model has seen before its claim's update
				// (another watch) is a machine without a claim for a moment.
				if n.NodeClaim != nil && n.Initialized() && registered[n.NodeClaim.Name] {
					initialized++
				}
			}
			return initialized == len(registered), nil
		})
		clk.Step(10 * time.Second)
	}
	t.Logf("launches in 10 simulated minutes: %d, at %v", len(launchedAt), launchedAt)
	if len(launchedAt) > 5 {
		t.Errorf("%d NodeClaims launched for one pod in 10 minutes, want at most 5", len(launchedAt))
	}
	if len(launchedAt) < 2 {
		t.Errorf("%d NodeClaims launched; the breaker must retry after its backoff", len(launchedAt))
	}
	if got := testutil.ToFloat64(m.LaunchBackoffs.WithLabelValues(pool.Name)); got < 1 {
		t.Errorf("dovetail_provisioner_launch_backoffs_total = %v, want at least 1", got)
	}
	expectEvent(t, ns, pod.Name, "LaunchBackoff", "did not schedule there")
	expectEvent(t, "", pool.Name, "LaunchBackoff", "did not schedule on it")
}

// registerWithBootTaint plays the kubelet and a boot script: a Ready Node
// for the claim, initialized as Dovetail would mark it, with a taint the
// NodePool never declared.
func registerWithBootTaint(t *testing.T, nc *v1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	providerID := "fake://" + nc.Name
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = nc.Name
	if err := testEnv.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating NodeClaim status: %v", err)
	}
	labels := map[string]string{corev1.LabelHostname: nc.Name, v1.NodeRegisteredLabelKey: "true", v1.NodeInitializedLabelKey: "true"}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: providerID, Taints: []corev1.Taint{
			{Key: "example.com/boot-check", Value: "failed", Effect: corev1.TaintEffectNoSchedule},
		}},
	}
	if err := testEnv.Client.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), node) })
	node.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("20")},
	}
	node.Status.Allocatable = node.Status.Capacity
	if err := testEnv.Client.Status().Update(ctx, node); err != nil {
		t.Fatalf("updating node status: %v", err)
	}
}

// expectEvent waits for an event with reason on the named object whose
// message contains text.
func expectEvent(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	env.Eventually(t, 30*time.Second, fmt.Sprintf("a %s event on %s", reason, name), func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		opts := []client.ListOption{}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := testEnv.Client.List(ctx, list, opts...); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
				return true, nil
			}
		}
		return false, nil
	})
}
