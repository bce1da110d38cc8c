package disruption_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// driftedNode sets up a pool and one drifted on-demand node running a pod
// that no other node can take.
func (h *harness) driftedNode() (*v1.NodePool, *v1.NodeClaim, *corev1.Node) {
	h.t.Helper()
	np := h.pool("default", nil)
	nc, node := h.node("a", np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	h.pod("p1", "web", node.Name, "1")
	h.drift(nc)
	return np, nc, node
}

// expectStarted checks that a command taints the node, records the reason
// on its claim and launched one replacement, which it returns.
func (h *harness) expectStarted(nc *v1.NodeClaim, node *corev1.Node, reason v1.DisruptionReason) *v1.NodeClaim {
	h.t.Helper()
	if h.get(node); !tainted(node) {
		h.t.Errorf("node %s is not tainted %s", node.Name, v1.DisruptedTaintKey)
	}
	h.get(nc)
	if cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason); cond == nil || cond.Reason != string(reason) {
		h.t.Errorf("DisruptionReason = %+v, want %s", cond, reason)
	}
	repl := h.replacements(nc.Name)
	if len(repl) != 1 {
		h.t.Fatalf("%d replacements of %s, want 1", len(repl), nc.Name)
	}
	return repl[0]
}

// TestDriftReplacesThenDeletes: the queue taints the drifted node, launches
// its replacement, waits until the replacement is initialized (the node is
// marked for deletion once the model holds the replacement) and then
// deletes the drifted node.
func TestDriftReplacesThenDeletes(t *testing.T) {
	h := newHarness(t, nil)
	_, nc, node := h.driftedNode()
	if wait := h.decide(); wait != 0 {
		t.Errorf("a drift command waits %v, want none (drift is not validated)", wait)
	}
	repl := h.expectStarted(nc, node, v1.DisruptionReasonDrifted)
	if repl.Labels[v1.NodePoolLabelKey] != "default" || repl.Annotations[v1.NodePoolHashAnnotationKey] == "" {
		t.Errorf("replacement %s is not rendered from the pool: labels %v annotations %v", repl.Name, repl.Labels, repl.Annotations)
	}
	h.expectEvent("DisruptionLaunching", nc.Name, "Launching NodeClaim "+repl.Name)

	h.step()
	if h.get(nc); nc.DeletionTimestamp != nil {
		t.Fatal("deleted before the replacement was initialized")
	}
	if !h.marked(node.Name) {
		t.Error("the drifted node is not marked for deletion once its replacement is in the model")
	}
	h.expectEvent("DisruptionWaitingReadiness", node.Name, repl.Name)

	h.initialize(repl)
	h.step()
	if h.get(nc); nc.DeletionTimestamp == nil {
		t.Fatal("not deleted once the replacement was initialized")
	}
	h.expectEvent("DisruptionTerminating", nc.Name, "Drifted: replacing 1 node")
	if n := h.queue.Len(); n != 0 {
		t.Errorf("%d commands left in the queue", n)
	}
	if got := counterValue(t, h.metrics.NodeClaimsDisrupted.WithLabelValues("drifted", "default")); got != 1 {
		t.Errorf("nodeclaims_disrupted_total{reason=drifted} = %v, want 1", got)
	}
	if got := counterValue(t, h.metrics.DisruptionDecisions.WithLabelValues("replace", "drifted", "")); got != 1 {
		t.Errorf("voluntary_disruption_decisions_total{replace,drifted} = %v, want 1", got)
	}
}

// marked reports whether the model has the node marked for deletion.
func (h *harness) marked(name string) bool {
	for _, n := range h.cluster.Nodes() {
		if n.Name() == name {
			return n.MarkedForDeletion
		}
	}
	return false
}

// TestReplacementTimeoutRollsBack: a replacement that is not initialized in
// time rolls the command back: the node is untainted, its reason cleared,
// the replacement deleted and the mark undone.
func TestReplacementTimeoutRollsBack(t *testing.T) {
	h := newHarness(t, func(o *disrupter.Options) { o.ReplacementTimeout = time.Minute })
	_, nc, node := h.driftedNode()
	h.decide()
	repl := h.expectStarted(nc, node, v1.DisruptionReasonDrifted)
	h.step()
	h.clock.Step(time.Minute + time.Second)
	h.step()

	if h.get(node); tainted(node) {
		t.Error("node still tainted after the rollback")
	}
	if h.get(nc); meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason) != nil || nc.DeletionTimestamp != nil {
		t.Errorf("claim after rollback: deleted %v, conditions %+v", nc.DeletionTimestamp, nc.Status.Conditions)
	}
	if !h.deleted(repl) {
		t.Error("replacement not deleted")
	}
	h.settle()
	if h.marked(node.Name) {
		t.Error("node still marked for deletion")
	}
	if got := counterValue(t, h.metrics.DisruptionQueueFailures.WithLabelValues("replace", "drifted", "")); got != 1 {
		t.Errorf("queue_failures_total = %v, want 1", got)
	}
	h.expectEvent("DisruptionRolledBack", nc.Name, "replacements were not initialized within 1m0s")
}

// TestConsolidationIsValidatedAfterTheDelay: an emptiness decision waits
// the validation delay; if the node changed meanwhile it is dropped,
// otherwise it is carried out.
func TestConsolidationIsValidatedAfterTheDelay(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	nc, node := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	_, busy := h.node("b", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	h.pod("p1", "web", busy.Name, "1500m")
	h.clock.Step(time.Minute)

	if wait := h.decide(); wait != 15*time.Second {
		t.Fatalf("decision waits %v, want the 15s validation delay", wait)
	}
	if h.get(node); tainted(node) {
		t.Fatal("tainted before validation")
	}
	// A pod lands on the node during the delay: the decision is dropped.
	h.pod("late", "web", node.Name, "100m")
	h.clock.Step(15 * time.Second)
	h.decide()
	h.get(nc)
	if h.get(node); tainted(node) || nc.DeletionTimestamp != nil {
		t.Fatal("a decision that no longer holds was carried out")
	}
	if got := counterValue(t, h.metrics.DisruptionFailedValidations.WithLabelValues("empty")); got != 1 {
		t.Errorf("failed_validations_total{empty} = %v, want 1", got)
	}
	h.expectEvent("ConsolidationRejected", nc.Name, "churn validation failed")

	// The pod goes again: after the delay the node is deleted.
	if err := h.direct.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: h.ns}}); err != nil {
		t.Fatal(err)
	}
	h.decide()
	h.clock.Step(15 * time.Second)
	h.decide()
	if h.get(nc); nc.DeletionTimestamp == nil {
		t.Fatal("empty node not deleted after validation")
	}
	h.expectEvent("DisruptionTerminating", node.Name, "Empty: deleting 1 node (small; $0.100/h), saving $0.100/h")
}

// TestRestartResumesTheCommand: a new controller finds the command a
// previous one left waiting (from the replacement's annotation) and
// finishes it, instead of rolling it back.
func TestRestartResumesTheCommand(t *testing.T) {
	h := newHarness(t, nil)
	_, nc, node := h.driftedNode()
	h.decide()
	repl := h.expectStarted(nc, node, v1.DisruptionReasonDrifted)

	h.restart()
	h.decide()
	if h.queue.Len() != 1 {
		t.Fatalf("the new queue holds %d commands, want the resumed one", h.queue.Len())
	}
	if h.get(node); !tainted(node) {
		t.Fatal("the resumed command's node was untainted")
	}
	h.initialize(repl)
	h.step()
	h.step()
	if h.get(nc); nc.DeletionTimestamp == nil {
		t.Fatal("resumed command did not delete the drifted node")
	}
}

// TestRestartRollsBackAPartialLaunch: a command whose replacements were
// not all created when the controller stopped (its replacement says the
// command launches two; one exists) is not resumed by the next controller:
// the lone replacement is deleted, and the drifted node is decided again.
func TestRestartRollsBackAPartialLaunch(t *testing.T) {
	h := newHarness(t, nil)
	_, nc, node := h.driftedNode()
	h.decide()
	repl := h.expectStarted(nc, node, v1.DisruptionReasonDrifted)
	if got := repl.Annotations[disrupter.ReplacementCountAnnotationKey]; got != "1" {
		t.Fatalf("replacement %s annotation %s = %q, want 1", repl.Name, disrupter.ReplacementCountAnnotationKey, got)
	}
	stored := repl.DeepCopy()
	repl.Annotations[disrupter.ReplacementCountAnnotationKey] = "2"
	if err := h.direct.Patch(h.ctx, repl, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, 10*time.Second, "the cache to see the second replacement missing", func(ctx context.Context) (bool, error) {
		cached := &v1.NodeClaim{}
		if err := h.cached.Get(ctx, client.ObjectKeyFromObject(repl), cached); err != nil {
			return false, err
		}
		return cached.Annotations[disrupter.ReplacementCountAnnotationKey] == "2", nil
	})

	h.restart()
	if err := h.queue.Recover(h.ctx); err != nil {
		t.Fatal(err)
	}
	if h.queue.Len() != 0 {
		t.Fatalf("the new queue resumed %d commands, want the partial one rolled back", h.queue.Len())
	}
	if err := h.direct.Get(h.ctx, client.ObjectKeyFromObject(repl), repl); err == nil && repl.DeletionTimestamp == nil {
		t.Error("the lone replacement of a partial launch was not deleted")
	}
	// The controller's cleanup then untaints the node; the node, still
	// drifted, is decided again with a whole new command.
	h.decide()
	if h.get(nc); nc.DeletionTimestamp != nil {
		t.Error("the drifted NodeClaim was deleted though its replacement was not all there")
	}
	again := h.replacements(nc.Name)
	if len(again) != 1 || again[0].Name == repl.Name {
		t.Errorf("replacements after the rollback: %d, want one new one (not %s)", len(again), repl.Name)
	}
}

// TestRestartRollsBackWhatNoCommandOwns: a node left tainted with a
// disruption reason and no replacement (a command lost in a restart) is
// untainted and its reason cleared.
func TestRestartRollsBackWhatNoCommandOwns(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	nc, node := h.node("a", np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	h.pod("p1", "web", node.Name, "1")
	h.get(node)
	node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedNoScheduleTaint())
	if err := h.direct.Update(h.ctx, node); err != nil {
		t.Fatal(err)
	}
	h.get(nc)
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Underutilized", LastTransitionTime: metav1.Now(),
	})
	if err := h.direct.Status().Update(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	h.decide()
	if h.get(node); tainted(node) {
		t.Error("leftover taint not removed")
	}
	if h.get(nc); meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason) != nil {
		t.Error("leftover DisruptionReason not cleared")
	}
}

// TestQueueLoopBesideTheController: in the operator the queue's loop runs
// on its own goroutine while the disruption controller starts commands. An
// emptiness command (no replacements) is finished by StartCommand itself;
// the queue loop, polling all the while, must not finish it a second time.
// Run with -race.
func TestQueueLoopBesideTheController(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	var claims []*v1.NodeClaim
	for _, name := range []string{"a", "b", "c"} {
		nc, _ := h.node(name, np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
		claims = append(claims, nc)
	}
	h.clock.Step(time.Minute)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := h.queue.Reconcile(h.ctx); err != nil {
				t.Errorf("queue: %v", err)
				return
			}
		}
	}()
	wait := h.decide()
	h.clock.Step(wait)
	h.decide()
	close(stop)
	<-done

	for _, nc := range claims {
		if h.get(nc); nc.DeletionTimestamp == nil {
			t.Errorf("empty node %s not deleted", nc.Name)
		}
	}
	if got := counterValue(t, h.metrics.NodeClaimsDisrupted.WithLabelValues("empty", "default")); got != float64(len(claims)) {
		t.Errorf("nodeclaims_disrupted_total{reason=empty} = %v, want %d (each node once)", got, len(claims))
	}
	if n := h.queue.Len(); n != 0 {
		t.Errorf("%d commands left in the queue", n)
	}
}
