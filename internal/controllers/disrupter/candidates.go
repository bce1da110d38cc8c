package disrupter

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// markCandidates keeps the consolidation-candidate taint
// (machine.ConsolidationCandidateTaintKey, PreferNoSchedule) on exactly the
// Nodes of want, and off every other Node of the input, except that a node
// being removed (marked for deletion, or in a command) is left as it is:
// it takes no pods either way. Writes that fail are logged; the next pass
// tries them again.
func (c *Controller) markCandidates(ctx context.Context, in disruption.Input, want map[string]bool) {
	var added, removed []string
	var errs []error
	for _, n := range in.Nodes {
		if n.Node == nil || n.MarkedForDeletion || (n.NodeClaim != nil && in.Disrupting[n.NodeClaim.Name]) {
			continue
		}
		has := slices.ContainsFunc(n.Node.Spec.Taints, machine.IsConsolidationCandidateTaint)
		should := want[n.Node.Name]
		if has == should {
			continue
		}
		if err := setCandidateTaint(ctx, c.kubeClient, n.Node.Name, should); err != nil {
			errs = append(errs, err)
			continue
		}
		if should {
			added = append(added, n.Node.Name)
		} else {
			removed = append(removed, n.Node.Name)
		}
	}
	if len(added)+len(removed) > 0 {
		log.FromContext(ctx).V(1).Info("Marked the nodes consolidation means to remove", "taint", machine.ConsolidationCandidateTaintKey,
			"marked", len(want), "added", added, "removed", removed)
	}
	if err := errors.Join(errs...); err != nil {
		log.FromContext(ctx).Error(err, "Marking consolidation candidates")
	}
}

// setCandidateTaint adds or removes the consolidation-candidate taint; a
// node being deleted is not marked.
func setCandidateTaint(ctx context.Context, c client.Client, name string, on bool) error {
	verb := "unmarking"
	if on {
		verb = "marking"
	}
	err := editTaints(ctx, c, name, func(node *corev1.Node) bool {
		has := slices.ContainsFunc(node.Spec.Taints, machine.IsConsolidationCandidateTaint)
		if has == on || (on && !node.DeletionTimestamp.IsZero()) {
			return false
		}
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, machine.IsConsolidationCandidateTaint)
		if on {
			node.Spec.Taints = append(node.Spec.Taints, machine.ConsolidationCandidateTaint())
		}
		return true
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("%s node %s as a consolidation candidate: %w", verb, name, err))
	}
	return nil
}

// toSet turns names into a set, never nil.
func toSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}
