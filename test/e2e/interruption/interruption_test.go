package interruption_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestSpotInterruptionMovesPodsWithinPDBBeforeReclaim: a spot interruption
// warning for one node's instance moves its pods to other nodes before EC2
// reclaims the instance two minutes later, the PodDisruptionBudget's
// minimum holds at every moment (a watch on the pods), the NodeClaim gets
// Karpenter's SpotInterrupted event, and the replacement does not launch on
// the reclaimed (instance type, zone, spot) offering.
func TestSpotInterruptionMovesPodsWithinPDBBeforeReclaim(t *testing.T) {
	const app, replicas, minAvailable = "spot", 6, 5
	s := cluster.Begin(t)
	cluster.WaitClassReady(t, localcluster.DefaultName, 2*time.Minute)
	// The default pool's shape (c, m, r, spot and on-demand): spot is the
	// cheaper, so every node launches on spot.
	pool := s.Pool(awse2e.AWSPool("spot", localcluster.DefaultName))
	ns := s.Namespace()
	// Two pods per zone: the interrupted zone's pods must come back in the
	// same zone (max skew 1), so the replacement has to avoid the reclaimed
	// offering by instance type or capacity type, not by zone.
	cluster.Create(t, spreadOverZones(awse2e.Deployment(ns, app, pool.Name, replicas, "500m", "512Mi")))
	pdb(t, ns, app, minAvailable)
	pods := cluster.WaitRunning(t, ns, app, replicas, 4*time.Minute)
	availability := watchAvailability(t, ns, app)
	env.Eventually(t, 2*time.Minute, "all replicas Ready", func(ctx context.Context) (bool, error) {
		ready, _ := availability.Now()
		return ready == replicas, nil
	})

	node, nc, inst := victimOf(t, pool.Name, pods)
	if inst.CapacityType != ec2.CapacityTypeSpot {
		t.Fatalf("node %s runs on a %s instance %s, want spot (the cheaper)", node.Name, inst.CapacityType, inst.ID)
	}
	reclaimed := offering(inst.InstanceType, inst.Zone, v1.CapacityTypeSpot)
	var moved []string
	for _, p := range pods {
		if p.Spec.NodeName == node.Name {
			moved = append(moved, p.Name)
		}
	}
	before := map[string]bool{}
	for _, c := range cluster.PoolClaims(t, pool.Name) {
		before[c.Name] = true
	}
	beforeNodes := map[string]bool{}
	nodes, err := poolNodes(context.Background(), pool.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		beforeNodes[n.Name] = true
	}
	t.Logf("interrupting %s (%s, NodeClaim %s, node %s with pods %v)", inst.ID, reclaimed, nc.Name, node.Name, moved)

	availability.Record()
	warned := time.Now()
	if err := cluster.AWS.SendSpotInterruption(inst.ID); err != nil {
		t.Fatal(err)
	}

	// Follow the move closely: the first moment a replacement node is Ready,
	// and the first moment every pod of the interrupted node runs elsewhere.
	var replacementReady, podsMoved time.Duration
	var replacement string
	env.Eventually(t, 4*time.Minute, "a replacement node Ready and the interrupted node's pods Running elsewhere",
		func(ctx context.Context) (bool, error) {
			if replacementReady == 0 {
				nodes, err := poolNodes(ctx, pool.Name)
				if err != nil {
					return false, err
				}
				for _, n := range nodes {
					if !beforeNodes[n.Name] && nodeReady(&n) {
						replacementReady, replacement = time.Since(warned), n.Name
						break
					}
				}
			}
			if podsMoved == 0 {
				running, err := cluster.RunningPods(ctx, ns, app)
				if err != nil {
					return false, err
				}
				ok := len(running) == replicas
				for _, p := range running {
					if p.Spec.NodeName == node.Name || slices.Contains(moved, p.Name) {
						ok = false
					}
				}
				if ok {
					podsMoved = time.Since(warned)
				}
			}
			return replacementReady > 0 && podsMoved > 0, nil
		})
	t.Logf("spot interruption of %s: replacement node %s Ready %.1f s after the warning, last moved pod Running after %.1f s (reclaim at %.0f s)",
		inst.ID, replacement, replacementReady.Seconds(), podsMoved.Seconds(), localaws.SpotReclaimDelay.Seconds())
	if podsMoved >= localaws.SpotReclaimDelay {
		t.Errorf("the interrupted node's pods ran elsewhere only %.1f s after the warning, after the reclaim at %.0f s",
			podsMoved.Seconds(), localaws.SpotReclaimDelay.Seconds())
	}
	if _, minimum := availability.Now(); minimum < minAvailable {
		t.Errorf("Ready replicas dropped to %d during the interruption, below the PDB's minAvailable %d", minimum, minAvailable)
	}

	events := waitClaimEvent(t, nc.Name, "SpotInterrupted", time.Minute)
	waitClaimDeleting(t, nc.Name, time.Minute)

	// The replacements avoid the reclaimed offering.
	var launched []string
	for _, c := range cluster.PoolClaims(t, pool.Name) {
		if before[c.Name] || c.Status.ProviderID == "" {
			continue
		}
		launched = append(launched, c.Name+"="+claimOffering(&c))
		if claimOffering(&c) == reclaimed {
			t.Errorf("replacement NodeClaim %s launched on the reclaimed offering %s", c.Name, reclaimed)
		}
	}
	if len(launched) == 0 {
		t.Errorf("no replacement NodeClaim launched after the interruption")
	}
	t.Logf("NodeClaim %s events: %v; replacements: %v", nc.Name, events, launched)
}

// TestScheduledChangeReplacesNode: an AWS Health scheduled change (instance
// retirement) for a node's instance drains and replaces the node: the
// NodeClaim gets the Unhealthy event and is deleted, and its pods run on
// another node.
func TestScheduledChangeReplacesNode(t *testing.T) {
	const app = "retire"
	s := cluster.Begin(t)
	cluster.WaitClassReady(t, localcluster.DefaultName, 2*time.Minute)
	pool := s.Pool(awse2e.AWSPool("retire", localcluster.DefaultName))
	ns := s.Namespace()
	cluster.Create(t, awse2e.OneNodeEach(awse2e.Deployment(ns, app, pool.Name, 2, "500m", "512Mi")))
	pods := cluster.WaitRunning(t, ns, app, 2, 4*time.Minute)
	node, nc, inst := victimOf(t, pool.Name, pods)

	if err := cluster.AWS.SendScheduledChange(inst.ID); err != nil {
		t.Fatal(err)
	}
	events := waitClaimEvent(t, nc.Name, "Unhealthy", 2*time.Minute)
	waitClaimDeleting(t, nc.Name, time.Minute)
	waitMovedOff(t, ns, app, 2, node.Name, 4*time.Minute)
	waitInstanceGone(t, inst.ID, 3*time.Minute)
	t.Logf("scheduled change for %s: NodeClaim %s events %v; pods run elsewhere", inst.ID, nc.Name, events)
}

// TestStoppedInstanceIsReplaced: an instance stopped behind Dovetail's back
// (with EC2's state-change notification on the queue, as the EventBridge
// rule delivers it; the endpoint does not emit it by itself) has its node
// replaced and its pods rescheduled.
func TestStoppedInstanceIsReplaced(t *testing.T) {
	const app = "stopped"
	s := cluster.Begin(t)
	cluster.WaitClassReady(t, localcluster.DefaultName, 2*time.Minute)
	pool := s.Pool(awse2e.AWSPool("stopped", localcluster.DefaultName))
	ns := s.Namespace()
	cluster.Create(t, awse2e.OneNodeEach(awse2e.Deployment(ns, app, pool.Name, 2, "500m", "512Mi")))
	pods := cluster.WaitRunning(t, ns, app, 2, 4*time.Minute)
	node, nc, inst := victimOf(t, pool.Name, pods)

	if err := cluster.AWS.StopInstance(inst.ID); err != nil {
		t.Fatal(err)
	}
	if err := cluster.AWS.SendStateChange(inst.ID, "stopped"); err != nil {
		t.Fatal(err)
	}
	events := waitClaimEvent(t, nc.Name, "Stopping", 2*time.Minute)
	waitClaimDeleting(t, nc.Name, time.Minute)
	waitMovedOff(t, ns, app, 2, node.Name, 4*time.Minute)
	waitInstanceGone(t, inst.ID, 3*time.Minute)
	t.Logf("stopped %s: NodeClaim %s events %v; pods run elsewhere", inst.ID, nc.Name, events)
}

// TestSpotExhaustionFallsBackToOnDemandOnce: with no spot capacity left
// for any offering the NodePool allows, a pending pod gets an on-demand
// node, after at most one failed spot launch, and no more NodeClaims or
// instances are created afterwards (no launch loop).
func TestSpotExhaustionFallsBackToOnDemandOnce(t *testing.T) {
	const app = "fallback"
	types := []string{"m5.large", "m5.xlarge"}
	s := cluster.Begin(t)
	cluster.WaitClassReady(t, localcluster.DefaultName, 2*time.Minute)
	pool := awse2e.AWSPool("fallback", localcluster.DefaultName)
	awse2e.WithRequirement(pool, corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, types...)
	for _, it := range types {
		for _, sn := range cluster.Seed().Subnets {
			cluster.AWS.SetInsufficientCapacity(it, sn.Zone, ec2.CapacityTypeSpot, true)
			t.Cleanup(func() { cluster.AWS.SetInsufficientCapacity(it, sn.Zone, ec2.CapacityTypeSpot, false) })
		}
	}
	s.Pool(pool)
	ns := s.Namespace()
	claims := countClaims(t, pool.Name)
	earlier := map[string]bool{} // instances of an earlier run of this test (-count)
	for _, i := range launchedInstances(pool.Name) {
		earlier[i.ID] = true
	}
	before := cluster.Calls.Snapshot()
	cluster.Create(t, awse2e.Deployment(ns, app, pool.Name, 1, "500m", "512Mi"))
	pods := cluster.WaitRunning(t, ns, app, 1, 4*time.Minute)
	node := cluster.NodesOf(t, pods)[pods[0].Spec.NodeName]
	if got := node.Labels[v1.CapacityTypeLabelKey]; got != v1.CapacityTypeOnDemand {
		t.Errorf("the pod runs on a %s node %s, want on-demand (spot is exhausted)", got, node.Name)
	}
	nc := cluster.ClaimOfNode(t, pool.Name, node.Name)
	waitInitialized(t, nc.Name, 2*time.Minute)

	// Watch a bounded window after the node came up: nothing more launches.
	const window = 30 * time.Second
	check := func() (int, []string, int) {
		n, names := claims.count()
		return n, names, len(launchedSince(pool.Name, earlier))
	}
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(window)
	n, names, instances := check()
	for watching := true; watching; {
		select {
		case <-deadline:
			watching = false
		case <-ticker.C:
			n, names, instances = check()
			if n > 2 || instances > 2 {
				watching = false
			}
		}
	}
	fleets := cluster.Calls.Since(before)["ec2:CreateFleet"]
	if n > 2 {
		t.Errorf("%d NodeClaims created for one pending pod with spot exhausted, want at most 2: %v", n, names)
	}
	if instances > 2 {
		t.Errorf("%d instances launched for one pending pod with spot exhausted, want at most 2: %v", instances, instanceSummary(launchedSince(pool.Name, earlier)))
	}
	// One instance per NodeClaim: a claim launched twice leaks an instance.
	perClaim := map[string][]string{}
	for _, i := range launchedSince(pool.Name, earlier) {
		perClaim[i.Tags[awse2e.TagNodeClaim]] = append(perClaim[i.Tags[awse2e.TagNodeClaim]], i.ID)
	}
	for claim, ids := range perClaim {
		if len(ids) > 1 {
			t.Errorf("NodeClaim %s got %d instances %v, want 1", claim, len(ids), ids)
		}
	}
	if live := cluster.LiveInstances(pool.Name); len(live) != 1 {
		t.Errorf("%d live instances for one pending pod after the window, want 1: %v", len(live), instanceSummary(live))
	}
	// Still the same: the on-demand node stays, and nothing is pending.
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(node), &corev1.Node{}); err != nil {
		t.Errorf("the on-demand node %s is gone after the window: %v", node.Name, err)
	}
	events, err := claimEvents(context.Background(), nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spot exhausted for %v in every zone: on-demand node %s (%s); over %v after it: %d NodeClaims %v, %d instances %v, %d CreateFleet calls; events of %s: %v",
		types, node.Name, claimOffering(nc), window, n, names, instances, instanceSummary(launchedSince(pool.Name, earlier)), fleets, nc.Name, events)
}

// launchedSince lists the pool's instances, in any state, but the earlier ones.
func launchedSince(pool string, earlier map[string]bool) []ec2.Instance {
	var out []ec2.Instance
	for _, i := range launchedInstances(pool) {
		if !earlier[i.ID] {
			out = append(out, i)
		}
	}
	return out
}

// waitMovedOff waits until n pods of the app run, none on the node, and the node is gone.
func waitMovedOff(t *testing.T, ns, app string, n int, node string, timeout time.Duration) {
	t.Helper()
	env.Eventually(t, timeout, fmt.Sprintf("%d %s pods Running off node %s", n, app, node), func(ctx context.Context) (bool, error) {
		running, err := cluster.RunningPods(ctx, ns, app)
		if err != nil || len(running) != n {
			return false, err
		}
		for _, p := range running {
			if p.Spec.NodeName == node {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitInstanceGone waits until the instance is shutting down or terminated.
func waitInstanceGone(t *testing.T, id string, timeout time.Duration) {
	t.Helper()
	env.Eventually(t, timeout, "instance "+id+" to be terminated", func(context.Context) (bool, error) {
		inst, ok := cluster.AWS.EC2().Instance(id)
		return !ok || inst.State == ec2.StateShuttingDown || inst.State == ec2.StateTerminated, nil
	})
}

// instanceSummary names instances as id=type/zone/capacity(state).
func instanceSummary(list []ec2.Instance) []string {
	out := make([]string, 0, len(list))
	for _, i := range list {
		out = append(out, fmt.Sprintf("%s=%s(%s, NodeClaim %s)", i.ID, offering(i.InstanceType, i.Zone, i.CapacityType), i.State, i.Tags[awse2e.TagNodeClaim]))
	}
	return out
}
