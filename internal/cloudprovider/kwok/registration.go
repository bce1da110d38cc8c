package kwok

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// RegistrationController creates the Node of an instance launched with a
// registration delay once the delay has passed, the moment its simulated
// kubelet would join. It reads the instance from its NodeClaim, which the
// core stored with the labels Create returned (RegisterAfterLabelKey among
// them), so a restarted controller finishes what the old one started. It
// serves the claims of one provider's partition.
type RegistrationController struct {
	kubeClient    client.Client
	clock         clock.Clock
	cloudProvider *CloudProvider
}

// NewRegistrationController returns a registration controller for the
// instances of cloudProvider, creating Nodes through kubeClient and telling
// time by clk.
func NewRegistrationController(kubeClient client.Client, clk clock.Clock, cloudProvider *CloudProvider) *RegistrationController {
	return &RegistrationController{kubeClient: kubeClient, clock: clk, cloudProvider: cloudProvider}
}

// Name names the controller in logs and metrics.
func (c *RegistrationController) Name() string { return "kwok.registration" }

// Register adds the controller to the manager. It watches the NodeClaims of
// booting instances of the provider's partition.
func (c *RegistrationController) Register(_ context.Context, mgr manager.Manager) error {
	booting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, delayed := o.GetLabels()[RegisterAfterLabelKey]
		return delayed && o.GetLabels()[PartitionLabelKey] == c.cloudProvider.partition
	})
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}, builder.WithPredicates(booting)).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("registering controller %s: %w", c.Name(), err)
	}
	return nil
}

// Reconcile creates the claim's Node if its registration time has come, and
// otherwise asks to be called again when it will have.
func (c *RegistrationController) Reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (reconcile.Result, error) {
	// 1. Only booting instances of this provider, whose claim is not being
	// deleted: the core deletes the instance of a deleted claim.
	if !c.cloudProvider.booting(nodeClaim) || nodeClaim.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim))
	value := nodeClaim.Labels[RegisterAfterLabelKey]
	// 2. Not yet: come back when it is time. An unreadable time (Create
	// wrote it, so someone edited it) registers at once rather than
	// stranding the instance.
	registerAfter, err := parseRegisterAfter(value)
	if err != nil {
		logger.Error(err, "Registering node now: cannot read its registration time", "label", RegisterAfterLabelKey, "value", value)
	} else if wait := registerAfter.Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// 3. Create the Node as Create would have, handed to kwok.
	node, err := c.cloudProvider.nodeFromClaim(nodeClaim)
	if err != nil {
		// The claim will not change into a launchable one; do not retry.
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("registering nodeclaim %s: %w", nodeClaim.Name, err))
	}
	if err := c.kubeClient.Create(ctx, node); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating node for nodeclaim %s: %w", nodeClaim.Name, err)
		}
	} else {
		logger.V(1).Info("Registered instance", "Node", klog.KObj(node), "register-after", value)
	}
	// 4. The instance has its Node: the registration time has served and
	// leaves the claim, before the core's registration copies the claim's
	// labels onto the Node. Only now, so that a restart before this point
	// still finds the booting instance.
	if err := c.forgetRegistrationTime(ctx, nodeClaim); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// forgetRegistrationTime removes RegisterAfterLabelKey from the claim.
func (c *RegistrationController) forgetRegistrationTime(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if _, ok := nodeClaim.Labels[RegisterAfterLabelKey]; !ok {
		return nil
	}
	stored := nodeClaim.DeepCopy()
	delete(nodeClaim.Labels, RegisterAfterLabelKey)
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing %s from nodeclaim %s: %w", RegisterAfterLabelKey, nodeClaim.Name, err))
	}
	return nil
}

// nodeFromClaim builds the Node of a booting instance from its claim: the
// instance type, zone and capacity type are the claim's labels.
func (c *CloudProvider) nodeFromClaim(nodeClaim *v1.NodeClaim) (*corev1.Node, error) {
	reqs, err := requirements.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		return nil, fmt.Errorf("parsing requirements: %w", err)
	}
	name := nodeClaim.Labels[corev1.LabelInstanceTypeStable]
	it, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("instance type %q is not in the catalog", name)
	}
	zone, capacityType := nodeClaim.Labels[corev1.LabelTopologyZone], nodeClaim.Labels[v1.CapacityTypeLabelKey]
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			node := newNode(nodeClaim, reqs, candidate{instanceType: it, offering: o}, c.partition)
			// Resources a NodeOverlay added at launch are on the claim only.
			addMissing(node.Status.Capacity, nodeClaim.Status.Capacity)
			addMissing(node.Status.Allocatable, nodeClaim.Status.Allocatable)
			return node, nil
		}
	}
	return nil, fmt.Errorf("instance type %s has no %s offering in zone %q", name, capacityType, zone)
}

// addMissing adds to dst the resources of src it does not have.
func addMissing(dst, src corev1.ResourceList) {
	for name, q := range src {
		if _, ok := dst[name]; !ok {
			dst[name] = q.DeepCopy()
		}
	}
}
