package interruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// target is a NodeClaim an interruption message is about, with its Node
// when one has registered.
type target struct {
	instanceID string
	claim      *v1.NodeClaim
	node       *corev1.Node
}

// handle acts on a parsed, non-no-op message. Instances Dovetail does not
// manage are skipped. It returns an error only when an action that must be
// retried failed.
func (c *Controller) handle(ctx context.Context, msg Message) error {
	logger := log.FromContext(ctx)
	targets, err := c.lookup(ctx, msg.InstanceIDs)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		logger.V(1).Info("No NodeClaim for the interrupted instances")
		return nil
	}
	var errs []error
	for _, t := range targets {
		if err := c.handleTarget(ctx, msg, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lookup finds the NodeClaims (and their Nodes) whose provider ID,
// aws:///<zone>/<instance-id>, ends in one of the instance IDs. The zone is
// not in the message, so the index on full provider IDs cannot be used.
func (c *Controller) lookup(ctx context.Context, instanceIDs []string) ([]target, error) {
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	var targets []target
	for _, id := range instanceIDs {
		for i := range claims.Items {
			nc := &claims.Items[i]
			if !hasInstanceID(nc.Status.ProviderID, id) {
				continue
			}
			t := target{instanceID: id, claim: nc}
			if j := slices.IndexFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == nc.Status.ProviderID }); j >= 0 {
				t.node = &nodes.Items[j]
			}
			targets = append(targets, t)
		}
	}
	return targets, nil
}

// hasInstanceID reports a provider ID naming the instance.
func hasInstanceID(providerID, instanceID string) bool {
	return instanceID != "" && strings.HasSuffix(providerID, "/"+instanceID)
}

// handleTarget publishes the kind's events, marks a reclaimed spot offering
// unavailable and, for disrupting kinds, deletes the NodeClaim.
func (c *Controller) handleTarget(ctx context.Context, msg Message, t target) error {
	logger := log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(t.claim), "instance", t.instanceID)
	objs := []client.Object{t.claim}
	if t.node != nil {
		logger = logger.WithValues("Node", klog.KObj(t.node))
		objs = append(objs, t.node)
	}
	ctx = log.IntoContext(ctx, logger)
	c.publish(msg.Kind, t.instanceID, objs...)
	switch msg.Kind {
	case KindSpotInterrupted:
		c.markUnavailable(ctx, t.claim, v1.CapacityTypeSpot, "spot interruption warning")
	case KindCapacityReservationInterrupted:
		// EC2 is taking the reservation's capacity back: launch elsewhere.
		c.markUnavailable(ctx, t.claim, v1.CapacityTypeReserved, "capacity reservation interruption warning")
		if id := t.claim.Labels[awsv1.LabelCapacityReservationID]; id != "" && c.opts.MarkReservationUnavailable != nil {
			c.opts.MarkReservationUnavailable(id)
		}
	}
	if !msg.Kind.Disrupts() {
		logger.V(0).Info("Received an interruption message that needs no action")
		return nil
	}
	if !t.claim.DeletionTimestamp.IsZero() {
		logger.V(1).Info("NodeClaim is already being deleted")
		return nil
	}
	if t.node != nil && warnsOfReclaim(msg.Kind) {
		// Best effort: termination taints the node anyway once the claim
		// is deleted; tainting first only starts the replacement sooner.
		if err := c.taint(ctx, t.node); err != nil {
			logger.Error(err, "Tainting the interrupted Node before deleting its NodeClaim")
		}
	}
	if err := c.kubeClient.Delete(ctx, t.claim); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		return fmt.Errorf("deleting NodeClaim %s for instance %s: %w", t.claim.Name, t.instanceID, err)
	}
	logger.V(0).Info("Deleting NodeClaim for an interrupted instance", "startTime", msg.StartTime)
	if c.opts.NodeClaimsDisrupted != nil {
		c.opts.NodeClaimsDisrupted.WithLabelValues(string(msg.Kind), t.claim.Labels[v1.NodePoolLabelKey]).Inc()
	}
	return nil
}

// warnsOfReclaim reports the kinds that give two minutes' notice before the
// instance goes away, for which the replacement should start at once.
func warnsOfReclaim(k Kind) bool {
	return k == KindSpotInterrupted || k == KindCapacityReservationInterrupted
}

// markUnavailable marks the claim's (instance type, zone, capacity type)
// offering unavailable, so that the replacement goes elsewhere.
func (c *Controller) markUnavailable(ctx context.Context, nc *v1.NodeClaim, capacityType, reason string) {
	if c.opts.MarkUnavailable == nil {
		return
	}
	instanceType, zone := nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone]
	if instanceType == "" || zone == "" {
		log.FromContext(ctx).V(1).Info("NodeClaim has no instance type or zone label; not marking its offering unavailable")
		return
	}
	c.opts.MarkUnavailable(instanceType, zone, capacityType, reason)
	log.FromContext(ctx).V(1).Info("Marked offering unavailable", "instanceType", instanceType, "zone", zone, "capacityType", capacityType)
}

// taint adds karpenter.sh/disrupted:NoSchedule to the node, the taint the
// core's termination would add, with an optimistic lock (taints are an
// atomic list).
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	want := v1.DisruptedNoScheduleTaint()
	if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&want) }) {
		return nil
	}
	patched := node.DeepCopy()
	patched.Spec.Taints = append(slices.DeleteFunc(patched.Spec.Taints, func(t corev1.Taint) bool { return t.Key == want.Key }), want)
	if err := c.kubeClient.Patch(ctx, patched, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("tainting Node %s: %w", node.Name, err)
	}
	log.FromContext(ctx).V(0).Info("Tainted Node", "taint", want.ToString())
	return nil
}
