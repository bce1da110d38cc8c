package disrupter

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
)

// voluntaryReason reports a DisruptionReason value this controller writes
// and may therefore clear (Unhealthy, a repair's, included); Expired
// belongs to the expiration controller.
func voluntaryReason(reason string) bool {
	switch v1.DisruptionReason(reason) {
	case v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized, disruption.DisruptionReasonUnhealthy:
		return true
	}
	return false
}

func hasDisruptedTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
}

// taint adds karpenter.sh/disrupted:NoSchedule to the node.
func taint(ctx context.Context, c client.Client, name string) error {
	want := v1.DisruptedNoScheduleTaint()
	err := editTaints(ctx, c, name, func(node *corev1.Node) bool {
		if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&want) }) {
			return false
		}
		node.Spec.Taints = append(slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == want.Key }), want)
		return true
	})
	if err != nil {
		return fmt.Errorf("tainting node %s: %w", name, err)
	}
	return nil
}

// untaint removes the disrupted taint, unless the node is being deleted
// (termination keeps it tainted while it drains).
func untaint(ctx context.Context, c client.Client, name string) error {
	err := editTaints(ctx, c, name, func(node *corev1.Node) bool {
		if !node.DeletionTimestamp.IsZero() || !hasDisruptedTaint(node) {
			return false
		}
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
		return true
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("untainting node %s: %w", name, err))
	}
	return nil
}

// editTaints reads the node from the cache and, when edit changes its
// taints (and says so), patches them. Taints are an atomic list, so the
// patch carries an optimistic lock: a concurrent writer's change makes it
// fail rather than be lost.
func editTaints(ctx context.Context, c client.Client, name string, edit func(*corev1.Node) bool) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return fmt.Errorf("reading: %w", err)
	}
	stored := node.DeepCopy()
	if !edit(node) {
		return nil
	}
	return c.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

// setDisruptionReason records on the NodeClaim why it is being disrupted.
func setDisruptionReason(ctx context.Context, c client.Client, name string, reason v1.DisruptionReason, message string, now time.Time) error {
	nc := &v1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return fmt.Errorf("reading nodeclaim %s: %w", name, err)
	}
	stored := nc.DeepCopy()
	if !meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: string(reason), Message: message,
		ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(now),
	}) {
		return nil
	}
	if err := c.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting disruption reason of nodeclaim %s: %w", name, err)
	}
	return nil
}

// clearDisruptionReason removes a DisruptionReason this controller set,
// unless the claim is being deleted (the reason then explains its drain).
func clearDisruptionReason(ctx context.Context, c client.Client, name string) error {
	nc := &v1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("reading nodeclaim %s: %w", name, err))
	}
	if !nc.DeletionTimestamp.IsZero() || !ownDisruptionReason(nc) {
		return nil
	}
	stored := nc.DeepCopy()
	meta.RemoveStatusCondition(&nc.Status.Conditions, v1.ConditionTypeDisruptionReason)
	if err := c.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("clearing disruption reason of nodeclaim %s: %w", name, err))
	}
	return nil
}

// ownDisruptionReason reports a DisruptionReason condition this controller wrote.
func ownDisruptionReason(nc *v1.NodeClaim) bool {
	cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason)
	return cond != nil && voluntaryReason(cond.Reason)
}
