package termination_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
)

// TestNodeClaimFirstDeletion deletes a NodeClaim: its finalizer stamps the
// termination deadline and deletes the Node; the Node finalizer taints and
// drains the node and terminates the instance; then both finalizers go.
func TestNodeClaimFirstDeletion(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").terminationGracePeriod(time.Hour).obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pod := h.makePod("app", node.Name).obj()
	h.create(pod)

	h.delete(nodeClaim)
	if got := h.reconcileNodeClaim(nodeClaim); got.RequeueAfter == 0 {
		t.Errorf("reconcile with the Node still there = %+v, want a requeue", got)
	}
	h.get(nodeClaim)
	want := nodeClaim.DeletionTimestamp.Add(time.Hour).UTC().Format(time.RFC3339)
	if got := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Errorf("termination timestamp annotation = %q, want %q", got, want)
	}
	h.expectEvent(termination.ReasonTerminationGracePeriodExpiring, nodeClaim.Name, "All pods will be deleted by "+want)
	h.get(node)
	if node.DeletionTimestamp == nil {
		t.Fatal("NodeClaim finalizer did not delete the Node")
	}

	h.reconcileNode(node)
	h.get(node)
	if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == v1.DisruptedTaintKey && t.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("node taints = %v, want %s:NoSchedule", node.Spec.Taints, v1.DisruptedTaintKey)
	}
	if got := node.Labels[corev1.LabelNodeExcludeBalancers]; got != "karpenter" {
		t.Errorf("label %s = %q, want karpenter", corev1.LabelNodeExcludeBalancers, got)
	}
	h.expectTerminating("app")
	h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionUnknown, termination.ReasonDraining, "1 pods are waiting")
	h.expectEvent(termination.ReasonFailedDraining, node.Name, "1 pods are waiting to be evicted")
	h.expectEvent(termination.ReasonTerminationGracePeriodExpiring, node.Name, want)
	h.eventually("the Evicted event", func() (bool, error) { return len(h.events.Messages("Evicted", "app")) > 0, nil })

	h.finish()
	h.reconcileUntilGone(node, nodeClaim)
	if instances, _ := h.cloud.List(h.ctx); len(instances) != 0 {
		t.Errorf("instances left at the provider: %d", len(instances))
	}
	for name, got := range map[string]float64{
		"nodes_drained_total":         testutil.ToFloat64(h.metrics.NodesDrained.WithLabelValues(nodePool)),
		"nodes_terminated_total":      testutil.ToFloat64(h.metrics.NodesTerminated.WithLabelValues(nodePool)),
		"nodeclaims_terminated":       testutil.ToFloat64(h.metrics.NodeClaimsTerminated.WithLabelValues(nodePool)),
		"pods_drained_total":          testutil.ToFloat64(h.metrics.PodsDrained.WithLabelValues("Forceful Termination")),
		"eviction_requests{code=200}": testutil.ToFloat64(h.metrics.PodEvictionRequests.WithLabelValues("200")),
	} {
		if got != 1 {
			t.Errorf("%s = %v, want 1", name, got)
		}
	}
}

// TestNodeFirstDeletion deletes a Node: its finalizer deletes the NodeClaim
// too, records each stage on the claim's conditions, survives a failing
// cloud-provider Delete (the condition says why) and terminates the instance.
func TestNodeFirstDeletion(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)

	h.delete(node)
	if got := h.reconcileNode(node); got.RequeueAfter == 0 {
		t.Errorf("reconcile that deleted the NodeClaim = %+v, want a requeue", got)
	}
	h.get(nodeClaim)
	if nodeClaim.DeletionTimestamp == nil {
		t.Fatal("Node finalizer did not delete the NodeClaim")
	}

	h.cloud.Lock()
	h.cloud.NextDeleteErr = errors.New("the cloud is on fire")
	h.cloud.Unlock()
	if got := h.reconcileNode(node); got.RequeueAfter == 0 {
		t.Errorf("reconcile after a failed Delete = %+v, want a requeue", got)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionTrue, termination.ReasonDrained, "")
	h.expectCondition(nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionTrue, termination.ReasonVolumesDetached, "")
	h.expectCondition(nodeClaim, v1.ConditionTypeInstanceTerminating, metav1.ConditionUnknown, termination.ReasonInstanceTerminationFailed, "the cloud is on fire")
	h.expectEvent(termination.ReasonFailedTermination, nodeClaim.Name, "the cloud is on fire")
	if !h.exists(node) {
		t.Fatal("Node finalizer was removed although the instance was not terminated")
	}

	// The retry terminates the instance; the next one sees it gone.
	h.clock.Step(5 * time.Second)
	if got := h.reconcileNode(node); got.RequeueAfter == 0 {
		t.Errorf("reconcile while the instance terminates = %+v, want a requeue", got)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, termination.ReasonInstanceTerminating, "")
	h.reconcileUntilGone(node, nodeClaim)
	if instances, _ := h.cloud.List(h.ctx); len(instances) != 0 {
		t.Errorf("instances left at the provider: %v", instances)
	}
}

// TestNodeClaimDeleteErrorIsRecordedAndRetried fails the provider's Delete
// for a claim without a Node: the claim keeps its finalizer and says why
// until a retry succeeds, and no instance is left behind.
func TestNodeClaimDeleteErrorIsRecordedAndRetried(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	h.delete(nodeClaim)

	h.cloud.Lock()
	h.cloud.NextDeleteErr = errors.New("rate exceeded")
	h.cloud.Unlock()
	if got := h.reconcileNodeClaim(nodeClaim); got.RequeueAfter == 0 {
		t.Errorf("reconcile after a failed Delete = %+v, want a requeue", got)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeInstanceTerminating, metav1.ConditionUnknown, termination.ReasonInstanceTerminationFailed, "rate exceeded")
	h.expectEvent(termination.ReasonFailedTermination, nodeClaim.Name, "rate exceeded")
	h.get(nodeClaim)
	if !slices.Contains(nodeClaim.Finalizers, v1.TerminationFinalizer) {
		t.Fatal("finalizer removed although the instance was not terminated")
	}

	h.clock.Step(5 * time.Second)
	h.reconcileNodeClaim(nodeClaim)
	h.expectCondition(nodeClaim, v1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, termination.ReasonInstanceTerminating, "")
	h.clock.Step(5 * time.Second)
	h.reconcileNodeClaim(nodeClaim)
	h.expectGone(nodeClaim)
	if instances, _ := h.cloud.List(h.ctx); len(instances) != 0 {
		t.Errorf("instances left at the provider: %v", instances)
	}
}

// TestNodeClaimNeverLaunched deletes a claim that has no instance: it loses
// its finalizer without calling the provider, and without a termination
// deadline or its TerminationGracePeriodExpiring event (no pods wait on
// it; claims carry their finalizer from creation, so every claim deleted
// before its launch comes here).
func TestNodeClaimNeverLaunched(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.makeNodeClaim("claim").terminationGracePeriod(time.Hour).obj()
	h.create(nodeClaim)
	h.delete(nodeClaim)
	h.reconcileNodeClaim(nodeClaim)
	h.expectGone(nodeClaim)
	if got := h.events.Messages(termination.ReasonTerminationGracePeriodExpiring, nodeClaim.Name); len(got) != 0 {
		t.Errorf("a claim that never launched announced a termination deadline: %q", got)
	}
	h.cloud.Lock()
	defer h.cloud.Unlock()
	if len(h.cloud.DeleteCalls) != 0 {
		t.Errorf("provider Delete called %d times for a claim that never launched", len(h.cloud.DeleteCalls))
	}
}

// TestNotReadyNodeWithoutInstance deletes a NotReady Node whose instance is
// already gone: the finalizer goes at once, without tainting or evicting.
func TestNotReadyNodeWithoutInstance(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pod := h.makePod("app", node.Name).obj()
	h.create(pod)
	if err := h.cloud.Delete(h.ctx, nodeClaim); err != nil {
		t.Fatalf("terminating the instance behind the test's back: %v", err)
	}

	h.delete(node)
	h.reconcileNode(node) // deletes the NodeClaim
	h.reconcileNode(node)
	h.expectGone(node)
	h.get(pod)
	if pod.DeletionTimestamp != nil {
		t.Error("pod of a node whose instance is gone was evicted")
	}
	h.reconcileNodeClaim(nodeClaim)
	h.expectGone(nodeClaim)
}

// TestNodeWithoutDeletionIsLeftAlone reconciles a Node that is not being
// deleted, and one without the finalizer: nothing happens.
func TestNodeWithoutDeletionIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	if got := h.reconcileNode(node); !got.IsZero() {
		t.Errorf("reconcile of a live node = %+v, want nothing", got)
	}
	h.get(node)
	if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey }) {
		t.Errorf("live node was tainted: %v", node.Spec.Taints)
	}
	if got := h.reconcileNodeClaim(nodeClaim); !got.IsZero() {
		t.Errorf("reconcile of a live nodeclaim = %+v, want nothing", got)
	}
	h.get(nodeClaim)
	if nodeClaim.DeletionTimestamp != nil {
		t.Error("live nodeclaim was deleted")
	}
}
