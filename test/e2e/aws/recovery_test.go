package aws_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
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

// TestControllerKilledMidLaunchLeaksNothing: the controller process is
// SIGKILLed in the dangerous window of a launch: EC2 has served its
// CreateFleet (the instance exists, tagged with the NodeClaim's name) but
// the answer is held back in the endpoint's front, so the claim records no
// instance. A new process must adopt that instance for the claim rather
// than launch a second one, and the garbage collector must not take it for
// an orphan: in the end the pod runs, exactly the instances that back
// NodeClaims are live (none leaked, none second for the claim), every
// NodeClaim has its instance, and CreateFleet was called once.
func TestControllerKilledMidLaunchLeaksNothing(t *testing.T) {
	testKilledMidLaunch(t, 0)
}

// TestControllerKilledMidLaunchWhileEC2LagsLeaksNothing is the same kill
// while EC2 does not describe a new instance for 20 s, as happens on AWS:
// the restarted controller's look-up by the claim's tag finds nothing, so
// it calls CreateFleet again, and the request's ClientToken must make EC2
// answer with the first instance instead of launching a second one.
func TestControllerKilledMidLaunchWhileEC2LagsLeaksNothing(t *testing.T) {
	cluster.AWS.SetDescribeLag(20 * time.Second)
	t.Cleanup(func() { cluster.AWS.SetDescribeLag(0) })
	testKilledMidLaunch(t, 20*time.Second)
}

// testKilledMidLaunch kills the controller mid-launch, with EC2 describing
// new instances describeLag after their launch.
func testKilledMidLaunch(t *testing.T, describeLag time.Duration) {
	s := cluster.BeginProcess(t)
	pool := s.Pool(awse2e.AWSPool("restart", localcluster.DefaultName))
	ns := s.Namespace()
	hold := cluster.Calls.HoldNext("ec2:CreateFleet", awse2e.HasTag(awse2e.TagNodePool, pool.Name))
	t.Cleanup(func() {
		cluster.Calls.Disarm(hold)
		hold.Release()
	})
	before, earlier := cluster.Calls.Snapshot(), instancesByID() // the pool's name is reused by -count
	start := time.Now()
	cluster.Create(t, awse2e.Deployment(ns, "app", pool.Name, 0, "500m", "512Mi"))
	workloads.Scale(t, cluster.Client, ns, "app", 1)

	// 1. CreateFleet reached EC2 and its answer is held.
	timeout := time.NewTimer(3 * time.Minute)
	defer timeout.Stop()
	var servedAt time.Time
	select {
	case <-hold.Served():
		servedAt = time.Now()
	case <-timeout.C:
		t.Fatal("no CreateFleet for the pool reached the endpoint within 3m")
	}
	status, body := hold.Response()
	if status != http.StatusOK {
		t.Fatalf("the held CreateFleet failed at the endpoint (HTTP %d): %s", status, body)
	}
	launched := cluster.LiveInstances(pool.Name)
	if len(launched) != 1 {
		t.Fatalf("%d live instances of the pool once CreateFleet was served, want 1: %v", len(launched), launched)
	}
	held := launched[0]
	if !strings.Contains(string(body), held.ID) {
		t.Fatalf("the held CreateFleet response does not name instance %s: %s", held.ID, body)
	}
	claims := cluster.PoolClaims(t, pool.Name)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims of the pool while CreateFleet is held, want 1", len(claims))
	}
	claim := claims[0]
	if claim.Status.ProviderID != "" || meta.IsStatusConditionTrue(claim.Status.Conditions, v1.ConditionTypeLaunched) {
		t.Fatalf("NodeClaim %s records a launch (providerID %q) while its CreateFleet answer is held", claim.Name, claim.Status.ProviderID)
	}
	if tag := held.Tags[awse2e.TagNodeClaim]; tag != claim.Name {
		t.Fatalf("instance %s is tagged %s=%q, want NodeClaim %s", held.ID, awse2e.TagNodeClaim, tag, claim.Name)
	}
	t.Logf("CreateFleet served %v after the scale-up: instance %s (%s, %s) is %s, NodeClaim %s has no providerID; killing the controller",
		servedAt.Sub(start).Round(time.Millisecond), held.ID, held.InstanceType, held.Zone, held.State, claim.Name)

	// 2. SIGKILL the controller while the answer is held: the endpoint's
	//    front sees the connection go and drops the answer; release the hold.
	killed := time.Now()
	s.KillController()
	env.Eventually(t, time.Minute, "the held CreateFleet answer to be dropped with the killed controller's connection", func(context.Context) (bool, error) {
		select {
		case <-hold.Done():
			return true, nil
		default:
			return false, nil
		}
	})
	hold.Release()
	if delivered, err := hold.Delivered(); delivered {
		t.Fatalf("the held CreateFleet answer reached the killed controller (write error %v)", err)
	}
	if n := len(cluster.LiveInstances(pool.Name)); n != 1 {
		t.Fatalf("%d live instances of the pool after the kill, want 1", n)
	}

	// 3. A new controller adopts the instance.
	s.StartController()
	cluster.WaitRunning(t, ns, "app", 1, 4*time.Minute)
	running := time.Now()
	var report string
	env.Eventually(t, 4*time.Minute, "exactly the instances that back NodeClaims to be live, and every NodeClaim to have its instance", func(ctx context.Context) (bool, error) {
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
		return len(list.Items) == 1, nil
	})
	after := cluster.PoolClaims(t, pool.Name)
	if after[0].Name != claim.Name || awse2e.InstanceIDOf(after[0].Status.ProviderID) != held.ID {
		t.Errorf("NodeClaim %s (instance %s) backs the pod, want %s adopting the instance launched before the kill, %s",
			after[0].Name, awse2e.InstanceIDOf(after[0].Status.ProviderID), claim.Name, held.ID)
	}
	var ever []string
	for _, inst := range cluster.AWS.EC2().Instances() {
		if _, ok := earlier[inst.ID]; !ok && inst.Tags[awse2e.TagNodePool] == pool.Name {
			ever = append(ever, fmt.Sprintf("%s(%s)", inst.ID, inst.State))
		}
	}
	if len(ever) != 1 {
		t.Errorf("%d instances were launched for the pool during the test, want 1: %v", len(ever), ever)
	}
	fleets := cluster.Calls.Since(before)["ec2:CreateFleet"]
	switch {
	case describeLag == 0 && fleets != 1:
		t.Errorf("%d CreateFleet calls, want 1 (the restarted controller adopts the instance)", fleets)
	case describeLag > 0 && fleets > 2:
		t.Errorf("%d CreateFleet calls, want at most 2 (the restarted controller's own, answered from its ClientToken)", fleets)
	}
	t.Logf("after the restart: %s; instances launched for the pool: %v; CreateFleet calls: %d; pod Running %v after the kill",
		report, ever, fleets, running.Sub(killed).Round(time.Millisecond))
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
