package static_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/static"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestReplicasWithoutPods: a static pool of 3 gets exactly 3 NodeClaims
// with no pod in the cluster, of its cheapest type, and no more on later
// passes; scaled to 1, the two empty nodes go and the one running a pod
// stays.
func TestReplicasWithoutPods(t *testing.T) {
	h := newHarness(t)
	np := h.pool("static", 3, nil)

	h.reconcile(np)
	claims := h.claimsOf(np)
	if len(claims) != 3 {
		t.Fatalf("%d NodeClaims after the first pass, want 3: %v", len(claims), names(claims))
	}
	for _, nc := range claims {
		if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Name != np.Name {
			t.Errorf("NodeClaim %s owners %+v, want the NodePool", nc.Name, nc.OwnerReferences)
		}
		if len(nc.Spec.Resources.Requests) != 0 {
			t.Errorf("NodeClaim %s requests %v, want none (no pod asked for it)", nc.Name, nc.Spec.Resources.Requests)
		}
	}
	h.reconcile(np)
	if got := h.claimsOf(np); len(got) != 3 {
		t.Fatalf("%d NodeClaims after a second pass, want still 3: %v", len(got), names(got))
	}
	if got := counterValue(t, h.metrics.NodeClaimsCreated.WithLabelValues(static.CreatedReason, np.Name)); got != 3 {
		t.Errorf("nodeclaims_created_total{reason=static} = %v, want 3", got)
	}
	h.events.Expect(t, static.ReasonScaledUp, np.Name, "Created 3 NodeClaims to reach 3 of 3 replicas")

	// Launch them all; the cheapest type is chosen for each.
	var nodes []*corev1.Node
	for _, nc := range claims {
		nodes = append(nodes, h.initialize(nc))
	}
	for _, n := range nodes {
		if n.Labels[corev1.LabelInstanceTypeStable] != "small" || n.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot {
			t.Errorf("node %s is %s/%s, want the cheapest offering small/spot", n.Name,
				n.Labels[corev1.LabelInstanceTypeStable], n.Labels[v1.CapacityTypeLabelKey])
		}
	}
	busy := nodes[1].Name
	h.pod("web", busy, "500m")
	h.settle()
	h.settlePods(1)

	h.scale(np, 1)
	h.reconcile(np)
	left := h.claimsOf(np)
	if diff := cmp.Diff([]string{busy}, names(left)); diff != "" {
		t.Errorf("NodeClaims after scaling to 1 (-want +got; the node running a pod stays):\n%s", diff)
	}
	if got := counterValue(t, h.metrics.NodeClaimsDisrupted.WithLabelValues(static.DisruptedReason, np.Name)); got != 2 {
		t.Errorf("nodeclaims_disrupted_total{reason=overprovisioned} = %v, want 2", got)
	}
	for _, n := range nodes {
		if n.Name != busy {
			h.events.Expect(t, static.ReasonTerminating, n.Name, "static NodePool static scaled down to 1 replicas")
		}
	}
	// Nothing more goes on the next pass.
	h.reconcile(np)
	if got := h.claimsOf(np); len(got) != 1 {
		t.Errorf("%d NodeClaims after another pass, want 1", len(got))
	}
}

// TestNodeLimitCapsReplicas: limits.nodes 2 keeps a pool of 3 replicas at
// 2 NodeClaims, with a NodeLimitReached event on the NodePool.
func TestNodeLimitCapsReplicas(t *testing.T) {
	h := newHarness(t)
	np := h.pool("capped", 3, func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{"nodes": resource.MustParse("2")}
	})
	h.reconcile(np)
	h.reconcile(np)
	if got := h.claimsOf(np); len(got) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (limits.nodes): %v", len(got), names(got))
	}
	h.events.Expect(t, static.ReasonNodeLimitReached, np.Name, "Static NodePool kept at 2 of its 3 replicas by limits.nodes 2")
}

// TestStaticNodesAreNotConsolidated: past consolidateAfter, the disruption
// loop removes an empty node of a dynamic pool but leaves the static
// pool's nodes alone, the empty one and the under-used one.
func TestStaticNodesAreNotConsolidated(t *testing.T) {
	h := newHarness(t)
	np := h.pool("static", 2, nil)
	h.reconcile(np)
	var staticNodes []*corev1.Node
	for _, nc := range h.claimsOf(np) {
		staticNodes = append(staticNodes, h.initialize(nc))
	}
	h.pod("tiny", staticNodes[0].Name, "100m")
	dynamic := h.pool("dynamic", -1, nil)
	control := h.dynamicClaim("dynamic-empty", dynamic, "medium")
	h.initialize(control)
	h.settlePods(1)
	h.clock.Step(time.Minute)

	if wait := h.decide(); wait != 15*time.Second {
		t.Fatalf("disruption pass waits %v, want the 15s validation delay of the dynamic node's emptiness", wait)
	}
	h.clock.Step(15 * time.Second)
	h.decide()
	if env.Exists(h.ctx, t, h.direct, control) {
		if h.get(control); control.DeletionTimestamp == nil {
			t.Fatal("the empty dynamic node was not removed: the disruption loop did not act")
		}
	}
	// More passes: nothing of the static pool is ever taken.
	for range 3 {
		h.clock.Step(time.Minute)
		h.decide()
	}
	if got := h.claimsOf(np); len(got) != 2 {
		t.Errorf("static NodeClaims %v, want both kept", names(got))
	}
	for _, n := range staticNodes {
		if h.get(n); tainted(n) {
			t.Errorf("static node %s was tainted for disruption", n.Name)
		}
		for _, reason := range []string{"DisruptionTerminating", "DisruptionLaunching", "ConsolidationApproved"} {
			if msgs := h.events.Messages(reason, n.Name); len(msgs) > 0 {
				t.Errorf("static node %s got %s events: %q", n.Name, reason, msgs)
			}
		}
	}
}

// TestPendingPodsDoNotLaunchFromAStaticPool: the provisioner places a
// pending pod that fits on a static pool's node there, but a pod that
// needs a new node gets none from the static pool (it stays unschedulable
// while the static pool is the only one, and comes from a dynamic pool
// once there is one).
func TestPendingPodsDoNotLaunchFromAStaticPool(t *testing.T) {
	h := newHarness(t)
	np := h.pool("static", 1, nil)
	h.reconcile(np)
	claims := h.claimsOf(np)
	if len(claims) != 1 {
		t.Fatalf("%d static NodeClaims, want 1", len(claims))
	}
	node := h.initialize(claims[0])
	h.pendingPod("fits", "500m")
	h.pendingPod("big", "6")
	h.settle()

	plan, _, err := h.provisioner.Schedule(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if plan == nil {
		t.Fatal("no plan for two pending pods")
	}
	if len(plan.NewNodeClaims) != 0 {
		t.Errorf("the provisioner plans %d NodeClaims with only a static pool, want none", len(plan.NewNodeClaims))
	}
	placed := map[string]string{}
	for _, p := range plan.Placements {
		placed[p.Pod.Name] = p.Node
	}
	if placed["fits"] != node.Name {
		t.Errorf("pod fits placed on %q, want the static node %s; unschedulable: %+v", placed["fits"], node.Name, plan.Unschedulable)
	}
	if !slices.ContainsFunc(plan.Unschedulable, func(u simulator.Unschedulable) bool { return u.Pod.Name == "big" }) {
		t.Errorf("pod big is not unschedulable: %+v", plan.Unschedulable)
	}

	dynamic := h.pool("dynamic", -1, nil)
	h.settle()
	plan, _, err = h.provisioner.Schedule(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pools []string
	for _, c := range plan.NewNodeClaims {
		pools = append(pools, c.NodePool)
	}
	if diff := cmp.Diff([]string{dynamic.Name}, pools); diff != "" {
		t.Errorf("pools of the planned NodeClaims (-want +got):\n%s", diff)
	}
	if got := h.claimsOf(np); len(got) != 1 || !strings.HasPrefix(got[0].Name, np.Name+"-") {
		t.Errorf("static NodeClaims %v, want the one the static controller made", names(got))
	}
}

// TestShadowStaticPoolWritesNothing: a static pool annotated shadow-only
// gets no NodeClaim from the static controller, however far below its
// replicas it is.
func TestShadowStaticPoolWritesNothing(t *testing.T) {
	h := newHarness(t)
	np := h.pool("shadowed", 2, func(np *v1.NodePool) {
		np.Annotations = map[string]string{shadow.AnnotationKey: "true"}
	})
	h.reconcile(np)
	h.reconcile(np)
	if got := h.claimsOf(np); len(got) != 0 {
		t.Errorf("shadow static pool got NodeClaims %v, want none", names(got))
	}
}
