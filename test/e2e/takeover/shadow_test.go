package takeover_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestShadowBesideKarpenter runs Dovetail in shadow mode (--dry-run) on the
// full local control plane over a cluster Karpenter runs (its NodePool,
// Ready as Karpenter's readiness leaves it, and its NodeClaims and Nodes):
// a pod no node has room for gets a ShadowLaunch event on the NodePool,
// and a node emptied by a scale-down a ShadowDisrupt event once
// consolidateAfter has passed, while nothing is launched, tainted or
// deleted and the pending pod stays pending.
func TestShadowBesideKarpenter(t *testing.T) {
	ctx := context.Background()
	pool := karpenterNodePool("shadowed", "10s", "720h")
	t.Cleanup(func() { forceRemove(t) })
	create(t, karpenterNodeClass())
	create(t, pool)
	// Karpenter's readiness controller marks its pools Ready; in shadow
	// mode Dovetail's does not run.
	now := metav1.Now()
	for _, c := range []string{v1.ConditionTypeNodeClassReady, v1.ConditionTypeReady} {
		meta.SetStatusCondition(&pool.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: now, ObservedGeneration: pool.Generation})
	}
	if err := testEnv.Client.Status().Update(ctx, pool); err != nil {
		t.Fatalf("marking the NodePool Ready: %v", err)
	}
	busy := karpenterMachine(t, pool, "shbus", "test-zone-a")
	idle := karpenterMachine(t, pool, "shidl", "test-zone-b")
	ns := testEnv.Namespace(t)
	create(t, deployment(ns, "fill", busy, "3"))
	workloads.WaitRunning(t, testEnv.Client, ns, "fill", 1, 3*time.Minute)

	claims := watchClaims(t)
	opts := localcluster.OperatorOptions()
	opts.BatchIdleDuration = 500 * time.Millisecond
	opts.BatchMaxDuration = 3 * time.Second
	opts.LogWriter = testlog.Writer(t)
	opts.DisableWebhook = true
	opts.DryRun = true
	cluster := &localcluster.Cluster{ControlPlane: testEnv.ControlPlane, Client: testEnv.Client}
	controller, err := cluster.StartController(ctx, opts, compose.KwokOptions{InstanceTypes: string(kwok.InstanceTypesKarpenterKWOK)})
	if err != nil {
		t.Fatalf("starting the Dovetail controller: %v", err)
	}
	t.Cleanup(func() {
		if err := controller.Stop(); err != nil {
			t.Errorf("controller stopped with error: %v", err)
		}
	})

	// 1. Two more 3-cpu pods: one fits on the idle node, the other on no
	// node: Dovetail says it would launch one, and launches nothing.
	create(t, deployment(ns, "more", machine{claim: idle.claim}, "3"))
	workloads.Scale(t, testEnv.Client, ns, "more", 2)
	waitForEvent(t, shadow.ReasonLaunch, pool.Name)

	// 2. The idle node emptied: after consolidateAfter Dovetail says it
	// would remove it, and leaves it alone.
	workloads.Scale(t, testEnv.Client, ns, "more", 0)
	waitForEvent(t, shadow.ReasonDisrupt, idle.node.Name)

	if created, deleted := claims.created(), claims.deleted(); len(created) != 0 || len(deleted) != 0 {
		t.Errorf("in shadow mode: NodeClaims created %v, deleted %v; want none", created, deleted)
	}
	for _, m := range []machine{busy, idle} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.node.Name}}
		env.Get(ctx, t, testEnv.Client, node)
		if node.DeletionTimestamp != nil || slices.ContainsFunc(node.Spec.Taints, isDisruptedTaint) {
			t.Errorf("node %s deleted or tainted for disruption in shadow mode: %+v", node.Name, node.Spec.Taints)
		}
	}
	nodes := &corev1.NodeList{}
	if err := testEnv.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Errorf("%d nodes, want Karpenter's 2", len(nodes.Items))
	}
	t.Logf("shadow mode: %s for the pending pod and %s for %s, with no NodeClaim created or deleted and no node tainted", shadow.ReasonLaunch, shadow.ReasonDisrupt, idle.node.Name)
}

// waitForEvent waits for an event of that reason about the object named
// name (events of cluster-scoped objects are in the default namespace).
func waitForEvent(t *testing.T, reason, name string) {
	t.Helper()
	env.Eventually(t, 2*time.Minute, "a "+reason+" event about "+name, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := testEnv.Client.List(ctx, events); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == reason && e.InvolvedObject.Name == name
		}), nil
	})
}
