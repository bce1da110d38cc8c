package autoscaling_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestBudgetHeldNodeSaysWhenItsWindowOpens: an empty node that a budget of
// zero for reason Empty holds back (a daily window of an hour that began
// this minute) stays, and it and its NodeClaim get a DisruptionBlocked
// event naming the budget and the time its window opens (the end of the
// zero window); the NodePool gets Karpenter's blocking-budget event. Once
// the zero window is moved away from now, the node is removed.
func TestBudgetHeldNodeSaysWhenItsWindowOpens(t *testing.T) {
	const pool = "budget-held"
	start := time.Now().UTC().Truncate(time.Minute)
	schedule := fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour())
	np := disruptionPool(pool, "2s",
		nodeBudget("100%"),
		v1.Budget{Nodes: intstr.FromString("0"), Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour},
			Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}})
	startDisruption(t, np)
	ns := testEnv.Namespace(t)
	create(t, onPool(workloads.Deployment(ns, "once", 1, "500m", "512Mi"), pool))
	node := waitRunning(t, ns, "once", 1, 2*time.Minute)[0].Spec.NodeName
	claim := claimOf(t, node).Name
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)
	workloads.Scale(t, testEnv.Client, ns, "once", 0)

	want := fmt.Sprintf(`Disruption for reason Empty held by NodePool %s's budget 1 (nodes "0", reasons [Empty], schedule %q for 1h0m0s): `+
		"allows 0 of 1 nodes now, 0 taken by disruptions in progress or this decision; its disruption window opens at %s",
		pool, schedule, start.Add(time.Hour).Format(time.RFC3339))
	eventOn(t, "DisruptionBlocked", node, want)
	eventOn(t, "DisruptionBlocked", claim, want)
	eventOn(t, "DisruptionBlocked", pool, "No allowed disruptions for disruption reason Empty due to blocking budget")
	// Past consolidateAfter (2s) and the validation delay (1s) several
	// times over, the empty node is still there.
	expectNodesStay(t, watch, 10*time.Second, node)

	// Move the zero window twelve hours away: nothing holds the node.
	current := &v1.NodePool{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: pool}, current); err != nil {
		t.Fatal(err)
	}
	later := start.Add(12 * time.Hour)
	current.Spec.Disruption.Budgets[1].Schedule = new(fmt.Sprintf("%d %d * * *", later.Minute(), later.Hour()))
	if err := testEnv.Client.Update(context.Background(), current); err != nil {
		t.Fatalf("moving the budget's window: %v", err)
	}
	waitGone(t, 2*time.Minute, node)
	eventOn(t, "DisruptionTerminating", node, "Empty")
}
