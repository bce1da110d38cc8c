package autoscaling_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/podwatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// watchAvailability follows the app's Ready pods until the test ends.
func watchAvailability(t *testing.T, ns, app string) *podwatch.Availability {
	t.Helper()
	a, err := podwatch.Watch(testEnv.Clientset, ns, app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// lowest is the fewest Ready pods seen since Record.
func lowest(a *podwatch.Availability) int {
	_, minimum := a.Now()
	return minimum
}

// TestDeletingANodeDrainsWithinThePDB: deleting a node drains it through the
// Eviction API; the PDB's minimum available holds at every moment, the pods
// run again elsewhere, and the node and its NodeClaim go away.
func TestDeletingANodeDrainsWithinThePDB(t *testing.T) {
	startDovetail(t, nil)
	ctx := context.Background()
	ns := testEnv.Namespace(t)
	const replicas, minAvailable = 8, 6
	d := workloads.Deployment(ns, "guarded", replicas, "500m", "512Mi")
	// Spread the pods over at least two nodes so that one can be drained.
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
	}}
	create(t, d)
	create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: minAvailable},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
		},
	})
	pods := waitRunning(t, ns, "guarded", replicas, 2*time.Minute)
	watch := watchAvailability(t, ns, "guarded")
	env.Eventually(t, time.Minute, "all replicas Ready", func(ctx context.Context) (bool, error) {
		ready, _ := watch.Now()
		return ready == replicas, nil
	})
	watch.Record()

	// Delete the node running the most replicas.
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	victim := ""
	for name, n := range perNode {
		if victim == "" || n > perNode[victim] {
			victim = name
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim}}
	if err := testEnv.Client.Delete(ctx, node); err != nil {
		t.Fatalf("deleting node %s: %v", victim, err)
	}
	env.Eventually(t, 3*time.Minute, "node "+victim+" to be drained and gone", func(ctx context.Context) (bool, error) {
		err := testEnv.Client.Get(ctx, client.ObjectKey{Name: victim}, &corev1.Node{})
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	after := waitRunning(t, ns, "guarded", replicas, 2*time.Minute)
	for _, p := range after {
		if p.Spec.NodeName == victim {
			t.Errorf("pod %s still on the deleted node", p.Name)
		}
	}
	if got := lowest(watch); got < minAvailable {
		t.Errorf("availability dropped to %d during the drain; the PDB requires %d", got, minAvailable)
	}
	env.Eventually(t, time.Minute, "the deleted node's NodeClaim to be gone", func(context.Context) (bool, error) {
		for _, nc := range nodeClaims(t) {
			if nc.Status.NodeName == victim {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("drained %s (%d replicas); minimum available %d (PDB %d)", victim, perNode[victim], lowest(watch), minAvailable)
}

// TestControllerRestartMidProvisioningLeaksNothing: stopping the controller
// while it provisions and starting a new one creates no duplicate
// NodeClaims and leaks no Node: every pod runs, every node is owned by a
// NodeClaim, and every node runs pods.
func TestControllerRestartMidProvisioningLeaksNothing(t *testing.T) {
	d := startDovetail(t, nil)
	ns := testEnv.Namespace(t)
	create(t, workloads.Deployment(ns, "restart", 40, "1", "2Gi"))
	env.Eventually(t, time.Minute, "the first NodeClaim", func(context.Context) (bool, error) {
		return len(nodeClaims(t)) > 0, nil
	})
	d.restart(t)
	pods := waitRunning(t, ns, "restart", 40, 3*time.Minute)

	// Registration frees a Node before its claim's status names it, so
	// the last pods can run a moment before the last claim says so.
	env.Eventually(t, 30*time.Second, "every NodeClaim to name its node", func(context.Context) (bool, error) {
		for _, nc := range nodeClaims(t) {
			if nc.Status.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	claims := nodeClaims(t)
	claimByNode := map[string]string{}
	for _, nc := range claims {
		if nc.Status.NodeName == "" {
			t.Errorf("NodeClaim %s never registered a node", nc.Name)
		}
		claimByNode[nc.Status.NodeName] = nc.Name
	}
	nodes := &corev1.NodeList{}
	if err := testEnv.Client.List(context.Background(), nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		t.Fatal(err)
	}
	used := nodesOf(t, pods)
	for _, node := range nodes.Items {
		if _, ok := claimByNode[node.Name]; !ok {
			t.Errorf("node %s has no NodeClaim (leaked)", node.Name)
		}
		if _, ok := used[node.Name]; !ok {
			t.Errorf("node %s runs none of the pods (duplicate capacity)", node.Name)
		}
	}
	t.Logf("40 pods on %d nodes from %d NodeClaims across a controller restart", len(used), len(claims))
}
