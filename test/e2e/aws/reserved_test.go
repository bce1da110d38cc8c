package aws_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestReservationFilledFirstAndCountRespected: a NodePool that allows
// reserved, spot and on-demand capacity, on a class selecting a one-slot
// On-Demand Capacity Reservation for m5.large. Two pods that each need a
// node of their own: one lands in the reservation (labelled with its id and
// type) although spot is cheaper, the other goes to spot, and the endpoint
// never launches more instances into the reservation than it holds.
func TestReservationFilledFirstAndCountRespected(t *testing.T) {
	s := cluster.Begin(t)
	zone := cluster.Seed().Subnets[0].Zone
	cr, err := cluster.AWS.AddCapacityReservation(ec2.CapacityReservation{
		InstanceType: "m5.large", Zone: zone, AvailableInstanceCount: 1, InstanceMatchCriteria: "targeted",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.AWS.EC2().SetCapacityReservationAvailable(cr.ID, 0) })
	class := localcluster.DefaultEC2NodeClass(cluster.AWS.ClusterName())
	class.Name = "reserved"
	class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: cr.ID}}
	s.Class(class)
	ready := cluster.WaitClassReady(t, class.Name, 2*time.Minute)
	if len(ready.Status.CapacityReservations) != 1 || ready.Status.CapacityReservations[0].ID != cr.ID ||
		!meta.IsStatusConditionTrue(ready.Status.Conditions, awsv1.ConditionTypeCapacityReservationsReady) {
		t.Fatalf("class status: reservations %+v, conditions %+v", ready.Status.CapacityReservations, ready.Status.Conditions)
	}

	pool := awse2e.AWSPool("reserved", class.Name)
	setRequirement(pool, v1.CapacityTypeLabelKey, v1.CapacityTypeReserved, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)
	awse2e.WithRequirement(pool, corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, "m5.large")
	s.Pool(pool)
	ns := s.Namespace()
	cluster.Create(t, awse2e.OneNodeEach(awse2e.Deployment(ns, "reserved", pool.Name, 2, "1", "1Gi")))
	pods := cluster.WaitRunning(t, ns, "reserved", 2, 3*time.Minute)

	byType := map[string]int{}
	var reservedNode *corev1.Node
	for _, node := range cluster.NodesOf(t, pods) {
		ct := node.Labels[v1.CapacityTypeLabelKey]
		byType[ct]++
		if ct == v1.CapacityTypeReserved {
			reservedNode = node
		}
	}
	if byType[v1.CapacityTypeReserved] != 1 || byType[v1.CapacityTypeSpot] != 1 {
		t.Fatalf("nodes by capacity type %v, want one reserved and one spot", byType)
	}
	if reservedNode.Labels[awsv1.LabelCapacityReservationID] != cr.ID || reservedNode.Labels[awsv1.LabelCapacityReservationType] != "default" ||
		reservedNode.Labels[corev1.LabelTopologyZone] != zone {
		t.Errorf("reserved node labels %v, want reservation %s (default) in %s", reservedNode.Labels, cr.ID, zone)
	}
	var inReservation int
	live := cluster.LiveInstances(pool.Name)
	for _, inst := range live {
		if inst.CapacityReservationID == cr.ID {
			inReservation++
		}
	}
	if len(live) != 2 || inReservation != 1 {
		t.Errorf("%d live instances, %d in the reservation; want 2 and 1", len(live), inReservation)
	}
	for _, got := range cluster.AWS.EC2().CapacityReservations() {
		if got.ID == cr.ID && got.AvailableInstanceCount != 0 {
			t.Errorf("reservation %s has %d slots left, want 0", cr.ID, got.AvailableInstanceCount)
		}
	}
	t.Logf("nodes by capacity type %v; reserved node %s in %s", byType, reservedNode.Name, cr.ID)
}

// TestSpotExhaustionFallsBackToOnDemandOnce: with every spot pool of the
// only allowed type short of capacity, the first NodeClaim fails at launch,
// says so in an InsufficientCapacityError event and is deleted; the next
// simulation avoids the marked spot offerings and the pod gets one
// on-demand node: two CreateFleet calls and two NodeClaims in all, not a
// launch loop.
func TestSpotExhaustionFallsBackToOnDemandOnce(t *testing.T) {
	const typ = "c5.xlarge"
	s := cluster.Begin(t)
	pool := awse2e.AWSPool("spotice", localcluster.DefaultName)
	setRequirement(pool, v1.CapacityTypeLabelKey, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)
	awse2e.WithRequirement(pool, corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, typ)
	for _, sn := range cluster.Seed().Subnets {
		cluster.AWS.SetInsufficientCapacity(typ, sn.Zone, ec2.CapacityTypeSpot, true)
		t.Cleanup(func() { cluster.AWS.SetInsufficientCapacity(typ, sn.Zone, ec2.CapacityTypeSpot, false) })
	}
	cluster.WaitClassReady(t, localcluster.DefaultName, 2*time.Minute)
	s.Pool(pool)
	ns := s.Namespace()
	before := cluster.Calls.Snapshot()
	cluster.Create(t, awse2e.Deployment(ns, "spotice", pool.Name, 1, "1", "1Gi"))
	pods := cluster.WaitRunning(t, ns, "spotice", 1, 3*time.Minute)

	node := cluster.NodesOf(t, pods)[pods[0].Spec.NodeName]
	if got := node.Labels[v1.CapacityTypeLabelKey]; got != v1.CapacityTypeOnDemand || node.Labels[corev1.LabelInstanceTypeStable] != typ {
		t.Fatalf("the pod runs on %s/%s, want %s on-demand", node.Labels[corev1.LabelInstanceTypeStable], got, typ)
	}
	nc := cluster.ClaimOfNode(t, pool.Name, node.Name)
	env.Eventually(t, 2*time.Minute, "NodeClaim "+nc.Name+" to be initialized", func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeInitialized), nil
	})
	// The failed claim said why before it went.
	var iceEvents []string
	env.Eventually(t, time.Minute, "an InsufficientCapacityError event on the failed NodeClaim", func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		if err := cluster.Client.List(ctx, list); err != nil {
			return false, err
		}
		iceEvents = nil
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "NodeClaim" && strings.HasPrefix(e.InvolvedObject.Name, pool.Name+"-") && e.Reason == "InsufficientCapacityError" {
				iceEvents = append(iceEvents, e.InvolvedObject.Name+": "+e.Message)
			}
		}
		return len(iceEvents) > 0, nil
	})
	fleets := cluster.Calls.Since(before)["ec2:CreateFleet"]
	live := cluster.LiveInstances(pool.Name)
	if fleets != 2 || len(live) != 1 || len(iceEvents) != 1 {
		t.Errorf("%d CreateFleet calls, %d instances, %d insufficient-capacity events; want 2, 1, 1 (one spot failure, one on-demand launch): %v",
			fleets, len(live), len(iceEvents), iceEvents)
	}
	if !strings.Contains(iceEvents[0], "InsufficientInstanceCapacity") || !strings.Contains(iceEvents[0], "unavailable") {
		t.Errorf("event %q does not say the offerings were unavailable for lack of capacity", iceEvents[0])
	}
	if claims := cluster.PoolClaims(t, pool.Name); len(claims) != 1 {
		t.Errorf("pool has %d NodeClaims, want the one on-demand claim", len(claims))
	}
	t.Logf("fell back to on-demand (%s) after %d CreateFleet calls; events: %v", nc.Status.ProviderID, fleets, iceEvents)
}
