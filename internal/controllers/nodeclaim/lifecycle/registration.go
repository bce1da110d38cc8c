package lifecycle

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
)

// register finds the Node that joined for the claim's instance and hands it
// the claim's identity: labels, annotations, taints, owner and finalizer.
func (c *Controller) register(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	if !isTrue(nc, v1.ConditionTypeLaunched) || isTrue(nc, v1.ConditionTypeRegistered) {
		return reconcile.Result{}, false, nil
	}
	now := metav1.NewTime(c.clock.Now())
	// 1. Find the node by provider ID.
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes, client.MatchingFields{indexes.NodeProviderID: nc.Status.ProviderID}); err != nil {
		return reconcile.Result{}, false, fmt.Errorf("listing nodes for provider id %s: %w", nc.Status.ProviderID, err)
	}
	switch len(nodes.Items) {
	case 0:
		setCondition(nc, now, v1.ConditionTypeRegistered, metav1.ConditionUnknown, "NodeNotFound", "Node not registered with cluster")
		return reconcile.Result{}, false, nil
	case 1:
	default:
		setCondition(nc, now, v1.ConditionTypeRegistered, metav1.ConditionFalse, "MultipleNodesFound",
			fmt.Sprintf("%d nodes have provider id %s", len(nodes.Items), nc.Status.ProviderID))
		return reconcile.Result{}, false, nil
	}
	node := &nodes.Items[0]
	// 2. Sync the claim's identity onto the node.
	stored := node.DeepCopy()
	firstRegistration := node.Labels[v1.NodeRegisteredLabelKey] != "true"
	if firstRegistration && !hasTaint(node.Spec.Taints, v1.UnregisteredTaintKey) {
		c.recorder.Publish(unregisteredTaintMissingEvent(node))
	}
	// Hand the plan over before the scheduler can place anything here.
	if firstRegistration && c.nominator != nil {
		c.nominator.NominatePlanned(ctx, node, nc.Name)
	}
	syncNode(node, nc, firstRegistration)
	if err := c.patchRegistration(ctx, stored, node); err != nil {
		if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) {
			return reconcile.Result{}, false, err
		}
		// The cached Node was behind the API server's (the node-lifecycle
		// controller removed its not-ready taint, or this claim's earlier
		// pass registered it and the claim's write has not arrived), so a
		// removal by index no longer held: read the Node itself and try once
		// more, rather than fail and back off while its pods wait.
		live := &corev1.Node{}
		if err := c.apiReader.Get(ctx, client.ObjectKeyFromObject(node), live); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("reading node %s again: %w", node.Name, err)
		}
		stored, node = live.DeepCopy(), live
		syncNode(node, nc, node.Labels[v1.NodeRegisteredLabelKey] != "true")
		if err := c.patchRegistration(ctx, stored, node); err != nil {
			return reconcile.Result{}, false, err
		}
	}
	// 3. The claim is registered (logged and counted once the status is
	// written: reportTransitions).
	nc.Status.NodeName = node.Name
	setCondition(nc, now, v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	return reconcile.Result{}, false, nil
}

// patchRegistration writes what registration changed on the Node. The
// patch names only those changes and applies on top of the kubelet's (or
// kwok's) concurrent writes: see registrationPatch.
func (c *Controller) patchRegistration(ctx context.Context, stored, node *corev1.Node) error {
	if equality.Semantic.DeepEqual(stored, node) {
		return nil
	}
	patch, err := registrationPatch(stored, node)
	if err != nil {
		return err
	}
	if err := c.kubeClient.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("registering node %s: %w", node.Name, err)
	}
	return nil
}

// syncNode copies the claim's labels, annotations, taints, owner reference and
// finalizer onto the node and removes the unregistered taint. Startup taints
// are only added at first registration: a startup taint that was removed must
// stay removed.
func syncNode(node *corev1.Node, nc *v1.NodeClaim, firstRegistration bool) {
	node.Labels = mergeMaps(node.Labels, nc.Labels)
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	node.Annotations = mergeMaps(node.Annotations, nc.Annotations)
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey })
	wanted := slices.Clone(nc.Spec.Taints)
	if firstRegistration {
		wanted = append(wanted, nc.Spec.StartupTaints...)
	}
	for _, t := range wanted {
		if !slices.ContainsFunc(taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
			taints = append(taints, t)
		}
	}
	node.Spec.Taints = taints
	controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
	owner := metav1.OwnerReference{
		APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID,
		BlockOwnerDeletion: new(true),
	}
	if !slices.ContainsFunc(node.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == nc.UID }) {
		node.OwnerReferences = append(node.OwnerReferences, owner)
	}
}

func hasTaint(taints []corev1.Taint, key string) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
}
