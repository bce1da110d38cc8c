package autoscaling_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestHundredReplicasGetNodes: a 100-replica Deployment gets nodes and every
// pod is bound by the real kube-scheduler and Running.
func TestHundredReplicasGetNodes(t *testing.T) {
	startDovetail(t, nil)
	ns := testEnv.Namespace(t)
	create(t, workloads.Deployment(ns, "inflate", 100, "500m", "512Mi"))
	pods := waitRunning(t, ns, "inflate", 100, 3*time.Minute)

	nodes := nodesOf(t, pods)
	for name, node := range nodes {
		if node.Labels[v1.NodePoolLabelKey] != localcluster.DefaultName || node.Labels[v1.NodeInitializedLabelKey] != "true" {
			t.Errorf("pod node %s is not an initialized Dovetail node: %v", name, node.Labels)
		}
		if node.Labels[corev1.LabelInstanceTypeStable] == "" || node.Labels[corev1.LabelTopologyZone] == "" || node.Labels[v1.CapacityTypeLabelKey] == "" {
			t.Errorf("node %s lacks instance type, zone or capacity type labels: %v", name, node.Labels)
		}
	}
	for _, nc := range nodeClaims(t) {
		if !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeReady) {
			t.Errorf("NodeClaim %s is not Ready: %+v", nc.Name, nc.Status.Conditions)
		}
	}
	t.Logf("100 pods on %d nodes", len(nodes))
}

// TestZoneSpreadAndNodeAffinity: the nodes launched honour the pods' zonal
// spread, required node affinity and node selector.
func TestZoneSpreadAndNodeAffinity(t *testing.T) {
	startDovetail(t, nil)
	ns := testEnv.Namespace(t)
	d := workloads.Deployment(ns, "spread", 9, "1", "1Gi")
	spec := &d.Spec.Template.Spec
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	spec.NodeSelector = map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand}
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		}}},
	}}}
	create(t, d)
	pods := waitRunning(t, ns, "spread", 9, 2*time.Minute)

	nodes := nodesOf(t, pods)
	perZone := map[string]int{}
	for _, p := range pods {
		perZone[nodes[p.Spec.NodeName].Labels[corev1.LabelTopologyZone]]++
	}
	if len(perZone) != 3 {
		t.Errorf("pods in %d zones, want 3: %v", len(perZone), perZone)
	}
	for zone, n := range perZone {
		if n != 3 {
			t.Errorf("zone %s has %d pods, want 3 (max skew 1 over 9 pods): %v", zone, n, perZone)
		}
	}
	for name, node := range nodes {
		if node.Labels[corev1.LabelArchStable] != "amd64" || node.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand {
			t.Errorf("node %s is %s/%s, want amd64/on-demand", name, node.Labels[corev1.LabelArchStable], node.Labels[v1.CapacityTypeLabelKey])
		}
	}
}

// TestLimitsStopLaunches: a NodePool's cpu limit caps what it launches; the
// pods left over are told why.
func TestLimitsStopLaunches(t *testing.T) {
	pool := localcluster.DefaultNodePool()
	pool.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("8")}
	startDovetail(t, pool)
	ns := testEnv.Namespace(t)
	create(t, workloads.Deployment(ns, "capped", 20, "1", "1Gi"))
	expectEvent(t, ns, "FailedScheduling", "limit")
	// Every launch the limit allowed has happened by now; none may exceed it.
	env.Eventually(t, time.Minute, "launched claims to be Ready", func(ctx context.Context) (bool, error) {
		for _, nc := range nodeClaims(t) {
			if !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeReady) {
				return false, nil
			}
		}
		return true, nil
	})
	var cpu resource.Quantity
	for _, nc := range nodeClaims(t) {
		cpu.Add(*nc.Status.Capacity.Cpu())
	}
	if cpu.Cmp(resource.MustParse("8")) > 0 || cpu.IsZero() {
		t.Errorf("NodeClaims have %s cpu in total; want some, at most the 8-cpu limit", cpu.String())
	}
	running, err := runningPods(context.Background(), ns, "capped")
	if err != nil {
		t.Fatal(err)
	}
	if len(running) >= 20 {
		t.Errorf("%d pods running; the limit should have left some pending", len(running))
	}
}

// TestNotReadyNodeClassLaunchesNothing: while the NodePool's NodeClass is
// not Ready (here: being deleted), nothing is launched, and the NodePool says why.
func TestNotReadyNodeClassLaunchesNothing(t *testing.T) {
	startDovetail(t, nil)
	ctx := context.Background()
	nodeClass := localcluster.DefaultNodeClass()
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), nodeClass); err != nil {
		t.Fatal(err)
	}
	controllerutil.AddFinalizer(nodeClass, "test.dovetail.dev/hold")
	if err := testEnv.Client.Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.Delete(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc := localcluster.DefaultNodeClass()
		if testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc) == nil {
			nc.Finalizers = nil
			_ = testEnv.Client.Update(ctx, nc)
		}
	})
	env.Eventually(t, 30*time.Second, "the NodePool to report its NodeClass not ready", func(ctx context.Context) (bool, error) {
		pool := localcluster.DefaultNodePool()
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionTypeNodeClassReady)
		return c != nil && c.Status == metav1.ConditionFalse && meta.IsStatusConditionFalse(pool.Status.Conditions, v1.ConditionTypeReady), nil
	})
	ns := testEnv.Namespace(t)
	create(t, workloads.Deployment(ns, "blocked", 3, "1", "1Gi"))
	expectNothingLaunched(t, 10*time.Second)
}

// TestPodsNoNodePoolCanServeLaunchNothing: pods that no node can fit or
// whose selectors no NodePool allows launch nothing, and get an event saying why.
func TestPodsNoNodePoolCanServeLaunchNothing(t *testing.T) {
	startDovetail(t, nil)
	ns := testEnv.Namespace(t)
	create(t, workloads.Deployment(ns, "huge", 1, "1000", "1Gi"))
	picky := workloads.Deployment(ns, "picky", 1, "1", "1Gi")
	picky.Spec.Template.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
	create(t, picky)
	expectEvent(t, ns, "FailedScheduling", "huge")
	expectEvent(t, ns, "FailedScheduling", "picky")
	expectNothingLaunched(t, 10*time.Second)
}

// expectNothingLaunched checks that no NodeClaim appears for a while.
func expectNothingLaunched(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		if claims := nodeClaims(t); len(claims) > 0 {
			t.Fatalf("NodeClaim %s was launched; want none", claims[0].Name)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// expectEvent waits for an event of the reason in ns that mentions fragment
// (in its message or the involved object's name).
func expectEvent(t *testing.T, ns, reason, fragment string) {
	t.Helper()
	env.Eventually(t, time.Minute, reason+" event mentioning "+fragment, func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		if err := testEnv.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Source.Component == "dovetail" &&
				(strings.Contains(e.Message, fragment) || strings.Contains(e.InvolvedObject.Name, fragment)) {
				return true, nil
			}
		}
		return false, nil
	})
}
