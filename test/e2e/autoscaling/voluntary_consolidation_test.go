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

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestScaleDownConsolidates: a Deployment scaled from 100 to 20 replicas
// leaves under-used nodes; consolidation moves the pods onto fewer, cheaper
// nodes. Every replica keeps running or is rescheduled, the PDB's minimum
// available holds at every moment (watched from pod events), and the
// pool's hourly price drops.
func TestScaleDownConsolidates(t *testing.T) {
	const pool = "consolidate"
	// Nodes of at most 4 cpu, so that 100 replicas need many of them and
	// 20 need few: prices are about linear in size, so with large nodes a
	// cheaper cluster need not have fewer nodes.
	np := disruptionPool(pool, "5s", nodeBudget("50%"))
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"5"}})
	startDisruption(t, np)
	ns := testEnv.Namespace(t)
	const app, minAvailable = "inflate", 18
	create(t, onPool(workloads.Deployment(ns, app, 100, "500m", "512Mi"), pool))
	create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: minAvailable},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	})
	waitRunning(t, ns, app, 100, 3*time.Minute)
	before, nodesBefore := hourlyPrice(t, pool), len(poolNodes(t, pool))

	workloads.Scale(t, testEnv.Client, ns, app, 20)
	waitRunning(t, ns, app, 20, 2*time.Minute)
	watch := watchAvailability(t, ns, app)
	env.Eventually(t, time.Minute, "20 replicas Ready", func(context.Context) (bool, error) {
		ready, _ := watch.Now()
		return ready == 20, nil
	})
	watch.Record()

	settle(t, pool, 4*time.Minute)
	after, nodesAfter := hourlyPrice(t, pool), len(poolNodes(t, pool))
	pods := waitRunning(t, ns, app, 20, time.Minute)
	for name, node := range nodesOf(t, pods) {
		if node.Labels[v1.NodePoolLabelKey] != pool {
			t.Errorf("pod node %s is not in pool %s", name, pool)
		}
	}
	if got := lowest(watch); got < minAvailable {
		t.Errorf("availability dropped to %d during consolidation; the PDB requires %d", got, minAvailable)
	}
	if nodesAfter >= nodesBefore || after > before/2 {
		t.Errorf("nodes %d -> %d, $/h %.3f -> %.3f; want fewer nodes, at most half the price for a fifth of the pods", nodesBefore, nodesAfter, before, after)
	}
	// Not only the nodes the scale-down emptied: under-used ones too.
	expectEvent(t, "default", "DisruptionTerminating", "Underutilized: ")
	t.Logf("100 -> 20 replicas: %d -> %d nodes, $%.3f/h -> $%.3f/h; minimum available %d (PDB %d)",
		nodesBefore, nodesAfter, before, after, lowest(watch), minAvailable)
}

// TestScheduledBudgetBlocksInsideItsWindow: a zero budget whose schedule
// is active keeps an empty node (and says so on the NodePool); once the
// schedule's window no longer covers now, the node is removed.
func TestScheduledBudgetBlocksInsideItsWindow(t *testing.T) {
	const pool = "budget-window"
	always := v1.Budget{Nodes: intstr.FromInt32(0), Schedule: new("@hourly"), Duration: &metav1.Duration{Duration: time.Hour}}
	startDisruption(t, disruptionPool(pool, "2s", always))
	ns := testEnv.Namespace(t)
	create(t, onPool(workloads.Deployment(ns, "once", 1, "500m", "512Mi"), pool))
	pods := waitRunning(t, ns, "once", 1, 2*time.Minute)
	node := pods[0].Spec.NodeName
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)
	workloads.Scale(t, testEnv.Client, ns, "once", 0)

	expectEvent(t, "default", "DisruptionBlocked", "due to blocking budget")
	expectNodesStay(t, watch, 10*time.Second, node)

	// Move the window twelve hours away from now: the budget is inactive.
	np := &v1.NodePool{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	later := time.Now().UTC().Add(12 * time.Hour)
	np.Spec.Disruption.Budgets[0].Schedule = new(later.Format("4 15") + " * * *")
	if err := testEnv.Client.Update(context.Background(), np); err != nil {
		t.Fatal(err)
	}
	waitGone(t, time.Minute, node)
}

// TestDoNotDisruptIsHonoured: an empty node annotated do-not-disrupt and a
// node whose only pod is annotated do-not-disrupt are never disrupted,
// while an unprotected empty node of the same pool is removed; both
// protected nodes say why in an event.
func TestDoNotDisruptIsHonoured(t *testing.T) {
	const pool = "protected"
	startDisruption(t, disruptionPool(pool, "2s", nodeBudget("100%")))
	ns := testEnv.Namespace(t)
	ctx := context.Background()
	create(t, oneNodeEach(onPool(workloads.Deployment(ns, "spread", 3, "500m", "512Mi"), pool)))
	pods := waitRunning(t, ns, "spread", 3, 2*time.Minute)
	annotatedNode, podNode, plainNode := pods[0].Spec.NodeName, pods[1].Spec.NodeName, pods[2].Spec.NodeName
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)

	node := &corev1.Node{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: annotatedNode}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations[v1.DoNotDisruptAnnotationKey] = "true"
	if err := testEnv.Client.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
	guarded := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns, Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: podNode},
			Containers:   []corev1.Container{{Name: "pause", Image: env.PauseImage}},
		},
	}
	create(t, guarded)
	env.Eventually(t, time.Minute, "the guarded pod to run", func(ctx context.Context) (bool, error) {
		err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(guarded), guarded)
		return guarded.Status.Phase == corev1.PodRunning, err
	})

	workloads.Scale(t, testEnv.Client, ns, "spread", 0)
	waitGone(t, 2*time.Minute, plainNode)
	expectEvent(t, "default", "DisruptionBlocked", annotatedNode)
	expectEvent(t, "default", "DisruptionBlocked", podNode)
	expectNodesStay(t, watch, 10*time.Second, annotatedNode, podNode)
}
