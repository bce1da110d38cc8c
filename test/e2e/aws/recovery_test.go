package aws_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestInstanceTerminatedBehindTheBack: an instance EC2 terminates on its
// own loses its Node (the node bridge deletes it, as the cloud node
// lifecycle controller would), its NodeClaim goes, and its pod runs again
// on a new EC2 node; the other pod's node is untouched.
func TestInstanceTerminatedBehindTheBack(t *testing.T) {
	s := cluster.Begin(t)
	pool := s.Pool(awse2e.AWSPool("doomed", localcluster.DefaultName))
	ns := s.Namespace()
	cluster.Create(t, awse2e.OneNodeEach(awse2e.Deployment(ns, "app", pool.Name, 2, "500m", "512Mi")))
	pods := cluster.WaitRunning(t, ns, "app", 2, 3*time.Minute)
	victim := cluster.ClaimOfNode(t, pool.Name, pods[0].Spec.NodeName)
	survivor := cluster.ClaimOfNode(t, pool.Name, pods[1].Spec.NodeName)
	id := awse2e.InstanceIDOf(victim.Status.ProviderID)
	if err := cluster.AWS.TerminateInstance(id); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, 3*time.Minute, "the dead instance's NodeClaim "+victim.Name+" and Node to be gone", func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(victim), &v1.NodeClaim{}); client.IgnoreNotFound(err) != nil || err == nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(nodesWithProvider(ctx, victim.Status.ProviderID)) == 0, nil
	})
	env.Eventually(t, 3*time.Minute, "both pods Running, none on the dead instance", func(ctx context.Context) (bool, error) {
		running, err := cluster.RunningPods(ctx, ns, "app")
		if err != nil || len(running) != 2 {
			return false, err
		}
		pods = running
		for name, node := range cluster.NodesOf(t, running) {
			if node.Spec.ProviderID == victim.Status.ProviderID {
				return false, fmt.Errorf("pod runs on node %s of terminated instance %s", name, id)
			}
		}
		return true, nil
	})
	instances := instancesByID()
	for _, node := range cluster.NodesOf(t, pods) {
		checkEC2Node(t, node, instances)
	}
	if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(survivor), survivor); err != nil || survivor.DeletionTimestamp != nil {
		t.Errorf("the other NodeClaim %s was disturbed: %v", survivor.Name, err)
	}
	if got := len(cluster.LiveInstances(pool.Name)); got != 2 {
		t.Errorf("%d live instances for the pool, want 2 (the survivor and one replacement)", got)
	}
}

// TestControllerStoppedMidLaunchLeaksNothing: the controller is stopped as
// soon as the first NodeClaim appears, before it is launched or registered,
// and a new one is started; in the end the pods run and every live
// instance of the pool has exactly one NodeClaim naming it, and every
// NodeClaim has its instance.
func TestControllerStoppedMidLaunchLeaksNothing(t *testing.T) {
	s := cluster.Begin(t)
	pool := s.Pool(awse2e.AWSPool("restart", localcluster.DefaultName))
	ns := s.Namespace()
	cluster.Create(t, awse2e.OneNodeEach(awse2e.Deployment(ns, "app", pool.Name, 2, "500m", "512Mi")))
	var claimName string
	env.Eventually(t, 2*time.Minute, "the first NodeClaim to appear", func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := cluster.Client.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: pool.Name}); err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			claimName = list.Items[0].Name
			return true, nil
		}
		return false, nil
	})
	s.StopController()
	state := "not launched"
	nc := &v1.NodeClaim{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: claimName}, nc); err == nil &&
		meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeLaunched) {
		state = "launched"
	}
	leftover := len(cluster.LiveInstances(pool.Name))
	t.Logf("stopped the controller at NodeClaim %s (%s once stopped; %d instances of the pool then)", claimName, state, leftover)
	s.StartController()
	cluster.WaitRunning(t, ns, "app", 2, 4*time.Minute)

	var report string
	env.Eventually(t, 4*time.Minute, "every live instance to have exactly one NodeClaim and every NodeClaim an instance", func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := cluster.Client.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: pool.Name}); err != nil {
			return false, err
		}
		owners := map[string]int{}
		for _, c := range list.Items {
			if c.Status.ProviderID == "" {
				report = "NodeClaim " + c.Name + " has no instance"
				return false, nil
			}
			owners[awse2e.InstanceIDOf(c.Status.ProviderID)]++
		}
		live := cluster.LiveInstances(pool.Name)
		for _, inst := range live {
			if owners[inst.ID] != 1 {
				report = fmt.Sprintf("instance %s (NodeClaim tag %s) has %d NodeClaims", inst.ID, inst.Tags[awse2e.TagNodeClaim], owners[inst.ID])
				return false, nil
			}
			delete(owners, inst.ID)
		}
		if len(owners) > 0 {
			report = fmt.Sprintf("NodeClaims name instances that are not live: %v", owners)
			return false, nil
		}
		report = fmt.Sprintf("%d NodeClaims, %d live instances", len(list.Items), len(live))
		return len(list.Items) == 2, nil
	})
	t.Logf("after the restart: %s", report)
}

// nodesWithProvider lists the Nodes whose provider ID is the given one.
func nodesWithProvider(ctx context.Context, providerID string) []string {
	var out []string
	for _, n := range listNodes(ctx) {
		if n.Spec.ProviderID == providerID {
			out = append(out, n.Name)
		}
	}
	return out
}
