package interruption_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/interruption"
	localsqs "github.com/dovetail-autoscaler/dovetail/internal/localaws/sqs"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

func TestSpotInterruption(t *testing.T) {
	h := newHarness(t)
	inst := h.launch("spot", "m5.large")
	other := h.launch("bystander", "m5.large")

	h.send(localsqs.SpotInterruptionWarning(h.envelope(), inst.id, "terminate"))
	h.waitDeleting(inst.claim)
	h.waitDrained()
	h.waitDeleted(1)

	node := inst.node.DeepCopy()
	env.Get(h.ctx, t, testEnv.Client, node)
	if !slices.ContainsFunc(node.Spec.Taints, func(tt corev1.Taint) bool {
		return tt.Key == v1.DisruptedTaintKey && tt.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("Node taints %v lack %s:NoSchedule", node.Spec.Taints, v1.DisruptedTaintKey)
	}
	h.events.Expect(t, interruption.ReasonSpotInterrupted, inst.claim.Name, "Spot interruption")
	h.events.Expect(t, interruption.ReasonSpotInterrupted, inst.node.Name, "Spot interruption")
	if !h.offerings.IsUnavailable("m5.large", zone, v1.CapacityTypeSpot) {
		t.Errorf("offering m5.large/%s/spot is not marked unavailable", zone)
	}
	if h.offerings.IsUnavailable("m5.large", zone, v1.CapacityTypeOnDemand) {
		t.Errorf("offering m5.large/%s/on-demand is marked unavailable", zone)
	}
	if deleting, err := h.deleting(h.ctx, other.claim); err != nil || deleting {
		t.Errorf("bystander NodeClaim deleting=%v (%v)", deleting, err)
	}
	if got := h.metric("karpenter_interruption_received_messages_total", map[string]string{"message_type": "spot_interrupted"}); got != 1 {
		t.Errorf("received spot_interrupted = %v, want 1", got)
	}
	if got := h.metric("karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "spot_interrupted", "nodepool": nodePool}); got != 1 {
		t.Errorf("nodeclaims disrupted = %v, want 1", got)
	}
	if got := h.metric("karpenter_interruption_message_queue_duration_seconds", nil); got != 1 {
		t.Errorf("queue duration observations = %v, want 1", got)
	}
}

func TestRebalanceRecommendationOnlyPublishesAnEvent(t *testing.T) {
	h := newHarness(t)
	inst := h.launch("rebalance", "c5.large")

	h.send(localsqs.RebalanceRecommendation(h.envelope(), inst.id))
	h.waitDeleted(1)
	h.waitDrained()

	h.events.Expect(t, interruption.ReasonRebalanceRecommendation, inst.claim.Name, "Rebalance recommendation")
	if deleting, err := h.deleting(h.ctx, inst.claim); err != nil || deleting {
		t.Errorf("NodeClaim deleting=%v (%v), want kept", deleting, err)
	}
	if h.offerings.IsUnavailable("c5.large", zone, v1.CapacityTypeSpot) {
		t.Error("a rebalance recommendation marked the offering unavailable")
	}
	if got := h.metric("karpenter_nodeclaims_disrupted_total", nil); got != 0 {
		t.Errorf("nodeclaims disrupted = %v, want 0", got)
	}
}

func TestScheduledChangeDeletesEveryAffectedClaim(t *testing.T) {
	h := newHarness(t)
	a, b := h.launch("retire-a", "m5.large"), h.launch("retire-b", "m5.xlarge")
	start := h.clock.Now().Add(14 * 24 * time.Hour)

	h.send(localsqs.HealthScheduledChange(h.envelope(), localsqs.ScheduledChange{
		EventTypeCode: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED", Start: start, End: start.Add(time.Hour),
		Description: "retirement", InstanceIDs: []string{a.id, b.id},
	}))
	h.waitDeleting(a.claim)
	h.waitDeleting(b.claim)
	h.waitDrained()
	h.events.Expect(t, interruption.ReasonUnhealthy, a.claim.Name, "unhealthy")
	h.events.Expect(t, interruption.ReasonUnhealthy, b.node.Name, "unhealthy")
	if got := h.metric("karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "scheduled_change"}); got != 2 {
		t.Errorf("nodeclaims disrupted = %v, want 2", got)
	}
}

func TestStoppedStateChangeDeletesTheClaim(t *testing.T) {
	h := newHarness(t)
	inst := h.launch("stopped", "m5.large")

	if err := h.aws.SendStateChange(inst.id, "stopped"); err != nil {
		t.Fatal(err)
	}
	h.waitDeleting(inst.claim)
	h.waitDrained()
	h.events.Expect(t, interruption.ReasonStopping, inst.claim.Name, "stopping")
	env.Get(h.ctx, t, testEnv.Client, inst.node)
	if slices.ContainsFunc(inst.node.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == v1.DisruptedTaintKey }) {
		t.Error("a stop tainted the Node itself; only reclaim warnings should")
	}
}

func TestBadMessagesAreDroppedAndTheQueueMovesOn(t *testing.T) {
	h := newHarness(t)
	inst := h.launch("after-bad", "m5.large")

	h.send(`{"version":"0","source":"aws.ec2","detail-type":`) // malformed
	h.send(`{"version":"0","id":"x","detail-type":"EC2 AMI State Change","source":"aws.ec2","detail":{"ImageId":"ami-1"}}`)
	h.send(localsqs.InstanceStateChange(h.envelope(), inst.id, "running")) // no-op state
	h.send(localsqs.InstanceStateChange(h.envelope(), inst.id, "terminated"))

	h.waitDeleting(inst.claim)
	h.waitDeleted(4)
	h.waitDrained()
	h.events.Expect(t, interruption.ReasonTerminating, inst.claim.Name, "terminating")
	for typ, want := range map[string]float64{interruption.MessageTypeMalformed: 1, "no_op": 2, "instance_terminated": 1} {
		if got := h.metric("karpenter_interruption_received_messages_total", map[string]string{"message_type": typ}); got != want {
			t.Errorf("received %s = %v, want %v", typ, got, want)
		}
	}
}

func TestUnknownInstanceIsDeletedWithoutAction(t *testing.T) {
	h := newHarness(t)
	inst := h.launch("known", "m5.large")

	h.send(localsqs.SpotInterruptionWarning(h.envelope(), "i-0unknown00000000", "terminate"))
	h.waitDeleted(1)
	h.waitDrained()
	if deleting, err := h.deleting(context.Background(), inst.claim); err != nil || deleting {
		t.Errorf("unrelated NodeClaim deleting=%v (%v)", deleting, err)
	}
	if got := h.metric("karpenter_interruption_received_messages_total", map[string]string{"message_type": "spot_interrupted"}); got != 1 {
		t.Errorf("received spot_interrupted = %v, want 1", got)
	}
}
