package autoscaling_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// staticPool is a disruption pool made static with the replicas: no weight
// and no limit but limits.nodes, as admission requires of a static pool.
func staticPool(name string, replicas int64) *v1.NodePool {
	np := disruptionPool(name, "5s", nodeBudget("100%"))
	np.Spec.Replicas = ptr.To(replicas)
	np.Spec.Weight = nil
	np.Spec.Limits = nil
	return np
}

// TestStaticNodePoolRejectsWeight: the real API server refuses a static
// NodePool that also sets weight, naming the field.
func TestStaticNodePoolRejectsWeight(t *testing.T) {
	np := staticPool("static-weighted", 1)
	np.Spec.Weight = ptr.To[int32](10)
	removeAtEnd(t, np)
	err := testEnv.Client.Create(context.Background(), np)
	if err == nil {
		t.Fatal("a NodePool with both replicas and weight was admitted")
	}
	for _, want := range []string{"spec.weight", "weight may not be set on a static NodePool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("admission error %q does not mention %q", err, want)
		}
	}
}

// TestStaticNodePoolKeepsItsReplicas: on the full control plane a NodePool
// with replicas 3 gets exactly 3 Ready nodes with no pod anywhere; scaled
// to 1, two go and the one left, empty, is never consolidated although its
// consolidateAfter passes twice over; a pod that fits runs on it and no
// node is launched for it.
func TestStaticNodePoolKeepsItsReplicas(t *testing.T) {
	const pool = "static"
	port := startScraped(t, staticPool(pool, 3))
	left, _ := scaleStaticPoolTo1(t, port, pool)

	// 3. The empty node left is never consolidated: watch it for twice its
	// consolidateAfter (5s) and the validation delay (1s), with margin.
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)
	expectNodesStay(t, watch, 20*time.Second, left)
	if claims := claimNames(t, pool); len(claims) != 1 {
		t.Errorf("static pool has NodeClaims %v after the watch, want 1", claims)
	}

	// 4. A pod that fits runs on the static node; nothing is launched.
	ns := testEnv.Namespace(t)
	create(t, onPool(workloads.Deployment(ns, "fits", 1, "500m", "256Mi"), pool))
	pods := waitRunning(t, ns, "fits", 1, 2*time.Minute)
	if pods[0].Spec.NodeName != left {
		t.Errorf("pod runs on %s, want the static node %s", pods[0].Spec.NodeName, left)
	}
	if claims := claimNames(t, pool); len(claims) != 1 {
		t.Errorf("static pool has NodeClaims %v with the pod running, want 1", claims)
	}
}

// TestStaticScaleDownCountsEachNodeClaimOnce: scaling a static pool from 3
// to 1 counts karpenter_nodeclaims_disrupted_total{reason="overprovisioned"}
// once per NodeClaim deleted (a pass that ran before the cluster-state
// model showed its own deletions deleted and counted them again, 2 runs in
// 6).
func TestStaticScaleDownCountsEachNodeClaimOnce(t *testing.T) {
	const pool = "static-counted"
	port := startScraped(t, staticPool(pool, 3))
	scaleStaticPoolTo1(t, port, pool)
	expectMetric(t, port, fmt.Sprintf(`karpenter_nodeclaims_disrupted_total{nodepool=%q,reason="overprovisioned"}`, pool), 2)
}

// scaleStaticPoolTo1 waits until the static pool has its 3 Ready nodes and
// says so, scales it to 1 through the scale subresource (as `kubectl scale
// nodepool --replicas 1` does) and waits until two nodes and their
// NodeClaims are gone, each with a DisruptionTerminating event. It returns
// the node left and those removed.
func scaleStaticPoolTo1(t *testing.T, port int, pool string) (string, []string) {
	t.Helper()
	// 1. Three Ready nodes, no pod asking for them.
	env.Eventually(t, 2*time.Minute, "3 Ready nodes in the static pool", func(context.Context) (bool, error) {
		nodes := poolNodes(t, pool)
		for _, n := range nodes {
			if !nodeReady(n) {
				return false, nil
			}
		}
		return len(nodes) == 3, nil
	})
	eventOn(t, "StaticNodePoolScaledUp", pool, "to reach 3 of 3 replicas")
	expectMetric(t, port, fmt.Sprintf(`karpenter_nodeclaims_created_total{nodepool=%q,reason="static"}`, pool), 3)
	if claims := claimNames(t, pool); len(claims) != 3 {
		t.Fatalf("static pool has NodeClaims %v, want 3", claims)
	}

	// 2. Scale to 1: two nodes go.
	before := slices.Sorted(maps.Keys(poolNodes(t, pool)))
	np := &v1.NodePool{}
	np.Name = pool
	if err := testEnv.Client.SubResource("scale").Patch(context.Background(), np,
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatalf("scaling NodePool %s to 1: %v", pool, err)
	}
	var left []string
	env.Eventually(t, 2*time.Minute, "the static pool down to 1 node", func(context.Context) (bool, error) {
		left = slices.Sorted(maps.Keys(poolNodes(t, pool)))
		return len(left) == 1 && len(claimNames(t, pool)) == 1, nil
	})
	var removed []string
	for _, n := range before {
		if n != left[0] {
			removed = append(removed, n)
		}
	}
	waitGone(t, 2*time.Minute, removed...)
	for _, n := range removed {
		eventOn(t, "DisruptionTerminating", n, "static NodePool "+pool+" scaled down to 1 replicas")
	}
	return left[0], removed
}
