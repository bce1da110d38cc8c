package repair_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// expectRepaired checks that the claim is being deleted with a termination
// deadline of now, that its DisruptionReason is Unhealthy, that
// DisruptionTerminating was published containing want, and that the repair
// was counted once.
func (h *harness) expectRepaired(name, want string) {
	h.t.Helper()
	claim, ok := h.claim(name)
	if !ok || claim.DeletionTimestamp.IsZero() {
		h.t.Fatalf("claim %s not deleted", name)
	}
	if got, want := claim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey], h.clock.Now().UTC().Format(time.RFC3339); got != want {
		h.t.Errorf("termination timestamp %q, want %q (now)", got, want)
	}
	if cond := meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeDisruptionReason); cond == nil || cond.Reason != string(disruption.DisruptionReasonUnhealthy) {
		h.t.Errorf("DisruptionReason %+v, want Unhealthy", cond)
	}
	h.events.Expect(h.t, health.ReasonTerminating, name, want)
	h.events.Expect(h.t, health.ReasonTerminating, name, "its pods are deleted without waiting for evictions")
	if a, b := h.repaired(); a != 1 || b != 1 {
		h.t.Errorf(`karpenter_nodeclaims_disrupted_total{reason="unhealthy"} = %v, karpenter_nodeclaims_unhealthy_disrupted_total{condition="ready"} = %v; want 1, 1`, a, b)
	}
	if got := counter(h.t, h.metrics.DisruptionDecisions.WithLabelValues("replace", health.MetricReason, "")) +
		counter(h.t, h.metrics.DisruptionDecisions.WithLabelValues("delete", health.MetricReason, "")); got != 0 {
		h.t.Errorf("a repair counted as a voluntary disruption decision (%v)", got)
	}
}

// TestNotReadyNodeIsRepairedAfterItsToleration: 1 of 5 kwok nodes, empty,
// turns NotReady. During the provider's toleration the controller only
// asks to come back when it ends and nothing is requested; then it asks for
// the repair, the disruption loop deletes the NodeClaim (no pod to place,
// no replacement) with a termination deadline of now, publishes
// DisruptionTerminating and counts the repair once, and termination takes
// the dead node and its claim away at once (no drain waits on a kubelet
// that is gone).
func TestNotReadyNodeIsRepairedAfterItsToleration(t *testing.T) {
	h := newHarness(t, nil)
	h.launch(5)
	toleration := h.cloud.RepairPolicies()[0].TolerationDuration
	sick := h.nodeName[0]

	// 1. Healthy nodes need nothing.
	if res := h.reconcile(sick); !res.IsZero() {
		t.Errorf("healthy node: result %+v, want none", res)
	}

	// 2. NotReady: wait for the toleration, whatever the time within it.
	h.setReady(sick, corev1.ConditionFalse)
	h.waitForCache()
	if res := h.reconcile(sick); res.RequeueAfter != toleration {
		t.Errorf("just NotReady: requeue after %v, want %v", res.RequeueAfter, toleration)
	}
	h.clock.Step(toleration - time.Second)
	if res := h.reconcile(sick); res.RequeueAfter != time.Second {
		t.Errorf("1s before the end of the toleration: requeue after %v, want 1s", res.RequeueAfter)
	}
	if _, ok := h.requests.Get(sick); ok {
		t.Error("repair requested during the toleration")
	}
	h.decide()
	if claim, ok := h.claim(sick); !ok || !claim.DeletionTimestamp.IsZero() {
		t.Fatalf("claim deleted during the toleration")
	}
	if a, b := h.repaired(); a != 0 || b != 0 {
		t.Errorf("repairs counted during the toleration: %v, %v", a, b)
	}

	// 3. The toleration ends: the repair is requested (and looked at again
	// a minute later); the health controller deletes nothing itself.
	h.clock.Step(time.Second)
	if res := h.reconcile(sick); res.RequeueAfter != health.BlockedRecheck {
		t.Errorf("repair requested: result %+v, want a look again after %v", res, health.BlockedRecheck)
	}
	if req, ok := h.requests.Get(sick); !ok || req.Condition.Type != corev1.NodeReady || req.Unhealthy != 1 || req.Total != 5 {
		t.Fatalf("request %+v (%v), want Ready, 1 of 5 unhealthy", req, ok)
	}
	if claim, _ := h.claim(sick); !claim.DeletionTimestamp.IsZero() {
		t.Fatal("the health controller deleted the claim itself")
	}

	// 4. The disruption loop carries it out: empty, so deleted at once.
	h.decide()
	h.expectRepaired(sick, "Unhealthy (Ready=False since")
	for _, other := range h.nodeName[1:] {
		if claim, ok := h.claim(other); !ok || !claim.DeletionTimestamp.IsZero() {
			t.Errorf("healthy node %s's claim deleted", other)
		}
	}

	// 5. Another pass on the same node does not count it again.
	h.decide()
	if a, _ := h.repaired(); a != 1 {
		t.Errorf("repairs counted twice: %v", a)
	}

	// 6. Termination: the claim deletes its Node; the NotReady node whose
	// instance is going is not drained; then the claim goes, and its
	// request with the Node.
	h.terminate(sick)
}

// TestRepairBlockedWhenMoreThan20PercentUnhealthy: with 2 of 5 nodes
// NotReady past their toleration nothing is requested or repaired and
// NodeRepairBlocked names the count on the NodePool, the Node and the
// NodeClaim; once one recovers, the other is repaired on the next look.
func TestRepairBlockedWhenMoreThan20PercentUnhealthy(t *testing.T) {
	h := newHarness(t, nil)
	h.launch(5)
	toleration := h.cloud.RepairPolicies()[0].TolerationDuration
	a, b := h.nodeName[0], h.nodeName[1]
	h.setReady(a, corev1.ConditionFalse)
	h.setReady(b, corev1.ConditionFalse)
	h.waitForCache()
	h.clock.Step(toleration + time.Minute)

	for _, name := range []string{a, b} {
		if res := h.reconcile(name); res.RequeueAfter != health.BlockedRecheck {
			t.Errorf("blocked %s: requeue after %v, want %v", name, res.RequeueAfter, health.BlockedRecheck)
		}
	}
	if got := h.requests.Snapshot(); len(got) != 0 {
		t.Errorf("repairs requested while blocked: %v", got)
	}
	h.decide()
	for _, name := range []string{a, b} {
		if claim, ok := h.claim(name); !ok || !claim.DeletionTimestamp.IsZero() {
			t.Errorf("claim %s deleted with 2 of 5 nodes unhealthy", name)
		}
	}
	want := fmt.Sprintf("2 of 5 of the nodes of NodePool %s are unhealthy, more than 20%% (at most 1 may be)", h.pool.Name)
	h.events.Expect(t, health.ReasonBlocked, h.pool.Name, want)
	h.events.Expect(t, health.ReasonBlocked, a, want)
	h.events.Expect(t, health.ReasonBlocked, b, want)
	if n, m := h.repaired(); n != 0 || m != 0 {
		t.Errorf("repairs counted while blocked: %v, %v", n, m)
	}
	if got := h.events.Messages(health.ReasonTerminating, a); len(got) != 0 {
		t.Errorf("DisruptionTerminating while blocked: %q", got)
	}

	// b recovers: 1 of 5 is within the 20%, so a is repaired.
	h.setReady(b, corev1.ConditionTrue)
	h.waitForCache()
	h.reconcile(a)
	h.reconcile(b)
	h.decide()
	h.expectRepaired(a, "Unhealthy")
	if claim, _ := h.claim(b); !claim.DeletionTimestamp.IsZero() {
		t.Errorf("recovered node %s repaired", b)
	}
}

// sickWithPods launches two full nodes (a pod of 1500m each on an
// m5.large) and turns the first NotReady past its toleration; its pod, also
// annotated do-not-disrupt, fits on no other node. The repair is
// requested.
func (h *harness) sickWithPods() (sick, healthy string) {
	h.t.Helper()
	h.launch(2)
	sick, healthy = h.nodeName[0], h.nodeName[1]
	p := h.pod("sick-pod", sick, "1500m")
	p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if err := testEnv.Client.Update(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
	h.pod("healthy-pod", healthy, "1500m")
	h.setReady(sick, corev1.ConditionFalse)
	h.waitForCache()
	h.clock.Step(h.cloud.RepairPolicies()[0].TolerationDuration)
	h.reconcile(sick)
	if _, ok := h.requests.Get(sick); !ok {
		h.t.Fatal("repair not requested")
	}
	return sick, healthy
}

// TestReplacementComesFirst: the unhealthy node's pod needs a new node, so
// the repair launches a replacement first: the node is tainted, the claim
// says why, and it is deleted only once the replacement is initialized,
// do-not-disrupt notwithstanding.
func TestReplacementComesFirst(t *testing.T) {
	h := newHarness(t, nil)
	sick, healthy := h.sickWithPods()

	h.decide()
	repl := h.oneReplacement(sick)
	if node := h.node(sick); !hasTaint(node, v1.DisruptedTaintKey) {
		t.Errorf("unhealthy node not tainted %s", v1.DisruptedTaintKey)
	}
	h.events.Expect(t, disrupter.ReasonDisruptionLaunching, sick, "Launching NodeClaim "+repl.Name)

	// Not initialized yet: however many steps, the unhealthy claim stays.
	for range 3 {
		h.step()
		h.clock.Step(10 * time.Second)
	}
	if claim, _ := h.claim(sick); !claim.DeletionTimestamp.IsZero() {
		t.Fatal("the unhealthy claim was deleted before its replacement was initialized")
	}
	h.events.Expect(t, disrupter.ReasonDisruptionWaitingReadiness, sick, repl.Name)
	if a, _ := h.repaired(); a != 0 {
		t.Errorf("repair counted before the deletion: %v", a)
	}

	// Initialized: the unhealthy claim goes, the replacement stays.
	h.initialize(repl)
	h.step()
	claim, ok := h.claim(repl.Name)
	if !ok || !claim.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(claim.Status.Conditions, v1.ConditionTypeInitialized) {
		t.Fatalf("replacement %s not there and initialized", repl.Name)
	}
	h.expectRepaired(sick, "Unhealthy (Ready=False since")
	h.events.Expect(t, health.ReasonTerminating, sick, "replacing 1 node")
	if claim, _ := h.claim(healthy); !claim.DeletionTimestamp.IsZero() {
		t.Error("the healthy node was disrupted")
	}
	if n := h.queue.Len(); n != 0 {
		t.Errorf("%d commands left in the queue", n)
	}
}

// TestRepairIsForcedWhenTheReplacementIsLate: a replacement that is not
// initialized within the replacement timeout does not roll the repair
// back: the unhealthy claim is deleted anyway, with its termination
// deadline, and the replacement stays for the pods.
func TestRepairIsForcedWhenTheReplacementIsLate(t *testing.T) {
	h := newHarness(t, func(o *disrupter.Options) { o.ReplacementTimeout = time.Minute })
	sick, _ := h.sickWithPods()

	h.decide()
	repl := h.oneReplacement(sick)
	h.step()
	if claim, _ := h.claim(sick); !claim.DeletionTimestamp.IsZero() {
		t.Fatal("deleted before the timeout")
	}
	h.clock.Step(time.Minute + time.Second)
	h.step()
	h.expectRepaired(sick, "not waiting for the replacements: replacements were not initialized within 1m0s")
	if claim, ok := h.claim(repl.Name); !ok || !claim.DeletionTimestamp.IsZero() {
		t.Error("the replacement was deleted: a repair is not rolled back")
	}
	if got := h.events.Messages(disrupter.ReasonDisruptionRolledBack, sick); len(got) != 0 {
		t.Errorf("repair rolled back: %q", got)
	}
	if n := h.queue.Len(); n != 0 {
		t.Errorf("%d commands left in the queue", n)
	}
}

// TestRestartResumesTheRepair: a new disruption controller finds the
// repair a previous one left waiting for its replacement (from the
// replacement's annotation and the Unhealthy reason) and resumes it
// forced: when the replacement is late, the unhealthy claim is deleted
// rather than rolled back.
func TestRestartResumesTheRepair(t *testing.T) {
	h := newHarness(t, func(o *disrupter.Options) { o.ReplacementTimeout = time.Minute })
	sick, _ := h.sickWithPods()
	h.decide()
	repl := h.oneReplacement(sick)

	h.restart()
	h.decide()
	if n := h.queue.Len(); n != 1 {
		t.Fatalf("the new queue holds %d commands, want the resumed repair", n)
	}
	if node := h.node(sick); !hasTaint(node, v1.DisruptedTaintKey) {
		t.Fatal("the resumed repair's node was untainted")
	}
	h.clock.Step(time.Minute + time.Second)
	h.step()
	h.expectRepaired(sick, "not waiting for the replacements")
	if claim, ok := h.claim(repl.Name); !ok || !claim.DeletionTimestamp.IsZero() {
		t.Error("the replacement was deleted: a resumed repair is not rolled back")
	}
}

// TestRecoveredNodeIsNotRepaired: a node that recovers before the loop
// takes its request has the request dropped, and is left alone.
func TestRecoveredNodeIsNotRepaired(t *testing.T) {
	h := newHarness(t, nil)
	sick, _ := h.sickWithPods()
	h.setReady(sick, corev1.ConditionTrue)
	h.waitForCache()
	if res := h.reconcile(sick); !res.IsZero() {
		t.Errorf("recovered node: result %+v, want none", res)
	}
	if _, ok := h.requests.Get(sick); ok {
		t.Fatal("request kept after the node recovered")
	}
	h.decide()
	if claim, _ := h.claim(sick); !claim.DeletionTimestamp.IsZero() || len(h.replacements(sick)) != 0 {
		t.Error("a recovered node was repaired")
	}
}

// TestRepairDoesNotWaitForAValidation: while an emptiness decision waits
// its validation delay, a repair requested meanwhile is carried out on the
// next pass (its pod moves to the empty node, which is no candidate of a
// queued command yet: the repair deletes at once).
func TestRepairDoesNotWaitForAValidation(t *testing.T) {
	h := newHarness(t, nil)
	env.Get(h.ctx, t, testEnv.Client, h.pool)
	np := h.pool.DeepCopy()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("100%")}}
	if err := testEnv.Client.Patch(h.ctx, np, client.MergeFrom(h.pool)); err != nil {
		t.Fatal(err)
	}
	h.launch(3)
	sick, busy, empty := h.nodeName[0], h.nodeName[1], h.nodeName[2]
	h.pod("sick-pod", sick, "1500m")
	h.pod("busy-pod", busy, "1500m")
	h.setReady(sick, corev1.ConditionFalse)
	h.waitForCache()

	// The empty node's deletion waits for its validation.
	h.decide()
	if claim, _ := h.claim(empty); !claim.DeletionTimestamp.IsZero() {
		t.Fatal("the empty node was deleted before its validation")
	}
	h.clock.Step(h.cloud.RepairPolicies()[0].TolerationDuration)
	h.reconcile(sick)
	h.decide()
	h.expectRepaired(sick, "Unhealthy (Ready=False since")
	if claim, _ := h.claim(empty); !claim.DeletionTimestamp.IsZero() {
		t.Error("the empty node's validation was cut short")
	}
}

// TestShadowPoolNodeIsNotRepaired: the node of a NodePool annotated
// shadow-only is left alone by the live loop, and its repair is published
// as a shadow decision instead.
func TestShadowPoolNodeIsNotRepaired(t *testing.T) {
	h := newHarness(t, nil)
	env.Get(h.ctx, t, testEnv.Client, h.pool)
	np := h.pool.DeepCopy()
	patch := client.MergeFrom(h.pool)
	np.Annotations = map[string]string{shadow.AnnotationKey: "true"}
	if err := testEnv.Client.Patch(h.ctx, np, patch); err != nil {
		t.Fatal(err)
	}
	sick, _ := h.sickWithPods()
	h.decide()
	if claim, _ := h.claim(sick); !claim.DeletionTimestamp.IsZero() || len(h.replacements(sick)) != 0 {
		t.Fatal("a shadow pool's node was repaired")
	}
	if node := h.node(sick); hasTaint(node, v1.DisruptedTaintKey) {
		t.Error("a shadow pool's node was tainted")
	}
	h.events.Expect(t, shadow.ReasonDisrupt, sick, "Would disrupt: Unhealthy (Ready=False since")
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
