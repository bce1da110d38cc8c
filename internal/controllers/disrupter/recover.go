package disrupter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
)

// finishedMemory is how long the queue remembers the candidates of a
// finished command, so that their taint is not mistaken for a leftover
// while the model catches up with their deletion.
const finishedMemory = 5 * time.Minute

// Owns reports whether a queued command disrupts the NodeClaim, or did so
// recently.
func (q *Queue) Owns(claim string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if at, ok := q.finished[claim]; ok && q.clock.Since(at) < finishedMemory {
		return true
	}
	for _, cmd := range q.commands {
		for _, c := range cmd.candidates {
			if c.claim == claim {
				return true
			}
		}
	}
	return false
}

// remember records the candidates of a finished command.
func (q *Queue) remember(cmd *command) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for claim, at := range q.finished {
		if now.Sub(at) >= finishedMemory {
			delete(q.finished, claim)
		}
	}
	for _, c := range cmd.candidates {
		q.finished[c.claim] = now
	}
}

// Recover re-derives the commands a previous controller left waiting for
// their replacements: replacement NodeClaims name the claims they replace,
// and candidates still carry the DisruptionReason this controller set.
// Such commands resume with a fresh timeout; a repair's (reason Unhealthy)
// resumes forced. A command with fewer live replacements than it launched
// (ReplacementCountAnnotationKey: stopped mid-launch, or one failed) is not
// resumed and its replacements are deleted. Candidates without a command
// are rolled back by the controller's cleanup (a repair whose node is
// still due is then asked for again by the node.health controller).
func (q *Queue) Recover(ctx context.Context) error {
	q.work.Lock()
	defer q.work.Unlock()
	claims := &v1.NodeClaimList{}
	if err := q.kubeClient.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	byName := map[string]*v1.NodeClaim{}
	groups := map[string][]string{}
	launched := map[string]int{} // replacements each command launches, by its replaces value
	for i := range claims.Items {
		nc := &claims.Items[i]
		byName[nc.Name] = nc
		if value, ok := nc.Annotations[ReplacesAnnotationKey]; ok && nc.DeletionTimestamp.IsZero() {
			groups[value] = append(groups[value], nc.Name)
			// Absent (written before the count was) or unreadable: the
			// replacements found are taken as all of them.
			if n, err := strconv.Atoi(nc.Annotations[ReplacementCountAnnotationKey]); err == nil {
				launched[value] = max(launched[value], n)
			}
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	now := q.clock.Now()
	for _, value := range keys {
		cmd := &command{decision: disruption.DecisionReplace, replacements: groups[value], seen: map[string]bool{}, nodeNames: map[string]string{},
			deleted: map[string]bool{}, started: now}
		for _, name := range strings.Split(value, ",") {
			nc := byName[name]
			if nc == nil || !nc.DeletionTimestamp.IsZero() || !ownDisruptionReason(nc) {
				continue
			}
			cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason)
			cmd.reason = v1.DisruptionReason(cond.Reason)
			cmd.explanation = cond.Message
			cmd.candidates = append(cmd.candidates, candidateRef{
				claim: nc.Name, node: nc.Status.NodeName, providerID: nc.Status.ProviderID, pool: nc.Labels[v1.NodePoolLabelKey],
			})
		}
		if len(cmd.candidates) == 0 {
			continue // done (candidates deleted) or rolled back
		}
		if want := launched[value]; len(cmd.replacements) < want {
			// Stopped while launching, or a replacement failed and was
			// deleted: the room the decision counted on is not all there.
			// Without a command, the candidates are rolled back by the
			// controller's cleanup.
			log.FromContext(ctx).V(0).Info("Rolling back disruption left with only some of its replacements", "nodes", nodeNames(cmd),
				"replacements", cmd.replacements, "launched", len(cmd.replacements), "want", want, "reason", cmd.reason)
			for _, name := range cmd.replacements {
				if err := q.kubeClient.Delete(ctx, byName[name]); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("deleting replacement nodeclaim %s of a partial disruption: %w", name, err)
				}
			}
			continue
		}
		// A repair resumes forced: its candidates go, with or without
		// their replacements.
		if cmd.reason == disruption.DisruptionReasonUnhealthy {
			cmd.method, cmd.forced = disruption.MethodRepair, true
		}
		for _, r := range cmd.replacements {
			cmd.seen[r] = true
		}
		cmd.id = fmt.Sprintf("%s-%d", cmd.candidates[0].claim, now.UnixNano())
		if err := q.reserve(cmd); err != nil {
			continue
		}
		log.FromContext(ctx).V(0).Info("Resuming disruption left in progress", "command", cmd.id, "nodes", nodeNames(cmd),
			"replacements", cmd.replacements, "reason", cmd.reason)
	}
	return nil
}

// cleanup rolls back disruption that no command owns: the disrupted taint
// and the DisruptionReason condition of nodes that are not being deleted
// (left by a command that was lost in a restart, or by a failed rollback).
func (c *Controller) cleanup(ctx context.Context) error {
	var errs []error
	for _, n := range c.cluster.Nodes() {
		if n.NodeClaim == nil || n.Deleting() || c.queue.Owns(n.NodeClaim.Name) {
			continue
		}
		if n.Node != nil && hasDisruptedTaint(n.Node) {
			log.FromContext(ctx).V(0).Info("Removing leftover disrupted taint", "Node", n.Node.Name)
			errs = append(errs, untaint(ctx, c.kubeClient, n.Node.Name))
		}
		if ownDisruptionReason(n.NodeClaim) {
			errs = append(errs, clearDisruptionReason(ctx, c.kubeClient, n.NodeClaim.Name))
		}
	}
	return errors.Join(errs...)
}
