package autoscaling_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// sicken makes the node look as if its kubelet had reported NotReady since
// the given time: kwok stops managing it (it manages only the Nodes
// annotated kwok.x-k8s.io/node=fake, and would otherwise write Ready back),
// then the Node's Ready condition is written False through the status
// subresource. A test cannot wait out the provider's 10-minute toleration,
// and the repair controller measures it from lastTransitionTime. The
// kube-controller-manager's node lifecycle controller later turns the
// condition Unknown (lastTransitionTime now) once the node's lease has not
// been renewed for its grace period, as it would for a real dead kubelet.
func sicken(t *testing.T, name string, since time.Time) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("reading node %s: %v", name, err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	delete(node.Annotations, controlplane.KwokNodeAnnotationKey)
	if err := testEnv.Client.Patch(ctx, node, patch); err != nil {
		t.Fatalf("taking node %s from kwok: %v", name, err)
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "test: the kubelet stopped posting Ready", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(since)}
	replaced := false
	for i, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			node.Status.Conditions[i], replaced = ready, true
		}
	}
	if !replaced {
		node.Status.Conditions = append(node.Status.Conditions, ready)
	}
	if err := testEnv.Client.Status().Update(ctx, node); err != nil {
		t.Fatalf("marking node %s NotReady: %v", name, err)
	}
}

// heal gives the node back to kwok, which marks it Ready again and
// carries out its pods' deletion when the test's namespace goes.
func heal(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if client.IgnoreNotFound(err) != nil {
			t.Errorf("reading node %s: %v", name, err)
		}
		return
	}
	patch := client.MergeFrom(node.DeepCopy())
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[controlplane.KwokNodeAnnotationKey] = controlplane.KwokNodeAnnotationValue
	if err := testEnv.Client.Patch(ctx, node, patch); err != nil {
		t.Errorf("giving node %s back to kwok: %v", name, err)
	}
}

// repairPool is a disruption pool that never consolidates, so that only
// node repair removes its nodes.
func repairPool(name string) *v1.NodePool {
	return disruptionPool(name, v1.Never, nodeBudget("100%"))
}

// TestNodeRepairReplacesAnUnhealthyNode: one of a pool's 3 nodes has been
// NotReady for an hour, past the kwok provider's 10-minute toleration. Its
// pod fits on no other node, so a replacement NodeClaim is launched first,
// and the unhealthy NodeClaim is deleted only once the replacement is
// initialized (DisruptionTerminating "Unhealthy" on the Node and the
// NodeClaim, karpenter_nodeclaims_disrupted_total{reason="unhealthy"}
// counts it); the node goes without waiting on the kubelet that is gone,
// and its pod runs again on the new node. The healthy nodes stay.
func TestNodeRepairReplacesAnUnhealthyNode(t *testing.T) {
	const pool = "repair"
	port := startScraped(t, repairPool(pool))
	ns := testEnv.Namespace(t)
	create(t, oneNodeEach(onPool(workloads.Deployment(ns, "spread", 3, "500m", "512Mi"), pool)))
	pods := waitRunning(t, ns, "spread", 3, 2*time.Minute)
	sick, healthy := pods[0].Spec.NodeName, []string{pods[1].Spec.NodeName, pods[2].Spec.NodeName}
	claim := claimOf(t, sick).Name
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)
	// If the repair does not happen, kwok must take the node back for the
	// teardown to delete its pod.
	t.Cleanup(func() { heal(t, sick) })

	since := time.Now().Add(-time.Hour).Truncate(time.Second)
	sicken(t, sick, since)
	want := fmt.Sprintf("Disrupting node: Unhealthy (Ready=False since %s, longer than the 10m0s the cloud provider tolerates): replacing 1 node",
		since.UTC().Format(time.RFC3339))
	eventOn(t, "DisruptionTerminating", sick, want)
	eventOn(t, "DisruptionTerminating", claim, want)
	// Replacement first: the claim waited for its replacement, which was
	// initialized no later than the claim was deleted (the
	// DisruptionTerminating event, published right after the deletion).
	eventOn(t, "DisruptionWaitingReadiness", claim, "Waiting on readiness of NodeClaim")
	expectReplacedFirst(t, claim, eventTime(t, "DisruptionTerminating", claim))
	waitGone(t, 2*time.Minute, sick)
	env.Eventually(t, time.Minute, "the unhealthy node's NodeClaim to be gone", func(ctx context.Context) (bool, error) {
		err := testEnv.Client.Get(ctx, client.ObjectKey{Name: claim}, &v1.NodeClaim{})
		return err != nil && client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
	})
	expectMetric(t, port, fmt.Sprintf(`karpenter_nodeclaims_disrupted_total{nodepool=%q,reason="unhealthy"}`, pool), 1)

	// The drain skipped the node (its instance is gone and it is NotReady),
	// so its pod stays bound to it until the kube-controller-manager's pod
	// garbage collector deletes the orphan; then it is recreated and a node
	// is launched for it.
	env.Eventually(t, 3*time.Minute, "3 spread pods Running, none on the repaired node", func(ctx context.Context) (bool, error) {
		running, err := runningPods(ctx, ns, "spread")
		if err != nil {
			return false, err
		}
		for _, p := range running {
			if p.Spec.NodeName == sick {
				return false, nil
			}
		}
		return len(running) == 3, nil
	})
	if n := len(poolNodes(t, pool)); n != 3 {
		t.Errorf("pool has %d nodes after the repair, want 3 (the replacement for the pod)", n)
	}
	for _, n := range healthy {
		if watch.WasDisrupted(n) {
			t.Errorf("healthy node %s was disrupted", n)
		}
	}
}

// expectReplacedFirst fails unless a NodeClaim replacing claim exists and
// was Initialized no later than deleted, when claim was deleted (both to
// the second, as the API stores them).
func expectReplacedFirst(t *testing.T, claim string, deleted time.Time) {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	for _, nc := range list.Items {
		if !slices.Contains(strings.Split(nc.Annotations[nodeclaimutil.ReplacesAnnotationKey], ","), claim) {
			continue
		}
		cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeInitialized)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			t.Fatalf("replacement %s of %s is not initialized although %s is being deleted", nc.Name, claim, claim)
		}
		if cond.LastTransitionTime.Truncate(time.Second).After(deleted.Truncate(time.Second)) {
			t.Errorf("replacement %s initialized at %s, after %s was deleted at %s", nc.Name, cond.LastTransitionTime.UTC(), claim, deleted.UTC())
		}
		return
	}
	t.Fatalf("no NodeClaim annotated %s=%s: the unhealthy node was deleted without a replacement first", nodeclaimutil.ReplacesAnnotationKey, claim)
}

// eventTime is when Dovetail first published the event with the reason
// about the object.
func eventTime(t *testing.T, reason, object string) time.Time {
	t.Helper()
	list := &corev1.EventList{}
	if err := testEnv.Client.List(context.Background(), list, client.InNamespace("default")); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var first time.Time
	for _, e := range list.Items {
		if e.Reason != reason || e.Source.Component != "dovetail" || e.InvolvedObject.Name != object {
			continue
		}
		for _, at := range []time.Time{e.FirstTimestamp.Time, e.EventTime.Time, e.LastTimestamp.Time} {
			if !at.IsZero() && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	if first.IsZero() {
		t.Fatalf("no %s event about %s with a time", reason, object)
	}
	return first
}

// TestNodeRepairBlockedWhenTooManyAreUnhealthy: 2 of a pool's 3 nodes have
// been NotReady for an hour, more than the 20% of the pool (1 node) that
// may be repaired at once: neither is repaired, and a NodeRepairBlocked
// warning on the NodePool and on each node names the count. The nodes stay
// NotReady (kwok no longer manages them; the kube-controller-manager may
// turn them Unknown) and keep their NodeClaims.
func TestNodeRepairBlockedWhenTooManyAreUnhealthy(t *testing.T) {
	const pool = "repair-guard"
	startDisruption(t, repairPool(pool))
	ns := testEnv.Namespace(t)
	create(t, oneNodeEach(onPool(workloads.Deployment(ns, "spread", 3, "500m", "512Mi"), pool)))
	pods := waitRunning(t, ns, "spread", 3, 2*time.Minute)
	sick := []string{pods[0].Spec.NodeName, pods[1].Spec.NodeName}
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)
	t.Cleanup(func() {
		for _, n := range sick {
			heal(t, n)
		}
	})

	// Both nodes turn NotReady now, then both conditions are dated an hour
	// back: the repair controller never sees one of them past its
	// toleration without the other NotReady (a node's update reaches its
	// cache after every earlier Node update), as when a zone fails.
	for _, n := range sick {
		sicken(t, n, time.Now())
	}
	since := time.Now().Add(-time.Hour)
	for _, n := range sick {
		sicken(t, n, since)
	}
	want := fmt.Sprintf("Node repair blocked: 2 of 3 of the nodes of NodePool %s are unhealthy, more than 20%% (at most 1 may be)", pool)
	eventOn(t, "NodeRepairBlocked", pool, want)
	for _, n := range sick {
		eventOn(t, "NodeRepairBlocked", n, want, "; Ready=False since ")
	}
	expectNodesStay(t, watch, 20*time.Second, sick...)
	for _, n := range sick {
		node := &corev1.Node{}
		if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: n}, node); err != nil {
			t.Fatalf("reading node %s: %v", n, err)
		}
		if nodeReady(node) {
			t.Errorf("node %s is Ready again: kwok still manages it", n)
		}
		claim := claimOf(t, n)
		if claim.DeletionTimestamp != nil {
			t.Errorf("NodeClaim %s of unhealthy node %s deleted while the repair is blocked", claim.Name, n)
		}
	}
	for _, n := range sick {
		msgs, err := eventMessages(context.Background(), "DisruptionTerminating", n)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 {
			t.Errorf("DisruptionTerminating events on blocked node %s: %q", n, msgs)
		}
	}
}
