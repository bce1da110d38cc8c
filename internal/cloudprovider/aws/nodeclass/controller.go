package nodeclass

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Finalizer holds a deleted EC2NodeClass until its NodeClaims are gone and
// its launch templates and instance profile are deleted.
const Finalizer = v1.Group + "/termination"

// Timing.
const (
	// RefreshInterval is how often a class is resolved again without changes.
	RefreshInterval = time.Minute
	// waitInterval is how often a deleted class checks for NodeClaims again
	// (a NodeClaim's deletion also wakes it).
	waitInterval = time.Minute
	// conflictRequeue retries soon after losing an optimistic-lock race.
	conflictRequeue = time.Second
)

// Event reasons.
const (
	// EventWaitingOnNodeClaimTermination says a deleted class still has NodeClaims.
	EventWaitingOnNodeClaimTermination = "WaitingOnNodeClaimTermination"
)

// SubnetProvider lists the subnets selector terms match (subnet.Provider).
type SubnetProvider interface {
	List(ctx context.Context, terms []v1.SubnetSelectorTerm) ([]ec2types.Subnet, error)
}

// SecurityGroupProvider lists the security groups selector terms match
// (securitygroup.Provider).
type SecurityGroupProvider interface {
	List(ctx context.Context, terms []v1.SecurityGroupSelectorTerm) ([]ec2types.SecurityGroup, error)
}

// AMIProvider resolves amiSelectorTerms into status entries (ami.Provider).
type AMIProvider interface {
	List(ctx context.Context, nodeClass *v1.EC2NodeClass) ([]v1.AMI, error)
}

// InstanceProfileProvider resolves and deletes a class's instance profile
// (instanceprofile.Provider).
type InstanceProfileProvider interface {
	Resolve(ctx context.Context, nodeClass *v1.EC2NodeClass) (string, error)
	Delete(ctx context.Context, nodeClass *v1.EC2NodeClass) error
}

// CapacityReservationProvider resolves capacityReservationSelectorTerms
// (capacityreservation.Provider).
type CapacityReservationProvider interface {
	List(ctx context.Context, terms []v1.CapacityReservationSelectorTerm) ([]v1.CapacityReservation, error)
}

// EventRecorder publishes Kubernetes events; client-go's
// record.EventRecorder implements it.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Dependencies are what the controller calls. The four providers are
// required; the rest may be nil, which skips what they do.
type Dependencies struct {
	Subnets          SubnetProvider
	SecurityGroups   SecurityGroupProvider
	AMIs             AMIProvider
	InstanceProfiles InstanceProfileProvider
	// CapacityReservations resolves capacityReservationSelectorTerms; nil
	// resolves none (the condition is True with no reservations).
	CapacityReservations CapacityReservationProvider
	// ClusterCIDR resolves the service CIDR AL2023 classes need.
	ClusterCIDR *ClusterCIDR
	// ValidateUserData reports whether spec.userData parses for the family.
	ValidateUserData func(family, userData string) error
	// DeleteLaunchTemplates deletes the launch templates of a deleted class.
	DeleteLaunchTemplates func(ctx context.Context, nodeClassName string) error
	// Recorder publishes events.
	Recorder EventRecorder
}

// Controller resolves EC2NodeClasses into their status and finalizes them.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
	deps       Dependencies
}

// NewController returns the EC2NodeClass controller. It writes through
// kubeClient and stamps conditions with clk.
func NewController(kubeClient client.Client, clk clock.Clock, deps Dependencies) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk, deps: deps}
}

// Name identifies the controller in logs and metrics.
func (c *Controller) Name() string { return "aws.nodeclass" }

// Register adds the controller to the manager. It watches EC2NodeClasses
// (changes other than status) and deleted NodeClaims, which may release a
// deleted class.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.EC2NodeClass{}, builder.WithPredicates(notStatusOnly())).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodeClassOf), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("registering controller %s: %w", c.Name(), err)
	}
	return nil
}

// Reconcile resolves one class and writes its status, or finalizes it.
func (c *Controller) Reconcile(ctx context.Context, nodeClass *v1.EC2NodeClass) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("EC2NodeClass", klog.KObj(nodeClass)))
	// 1. A deleted class is finalized, not resolved.
	if !nodeClass.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nodeClass)
	}
	// 2. The finalizer and the static hash.
	if err := c.patchMetadata(ctx, nodeClass); err != nil {
		return conflictOr(err)
	}
	// 3. Resolve each part into a copy of the status.
	stored := nodeClass.DeepCopy()
	updated := nodeClass.DeepCopy()
	errs := c.resolve(ctx, updated)
	// 4. Ready is the AND of the other conditions.
	c.set(updated, v1.ConditionTypeReady, readyVerdict(updated.Status.Conditions))
	// 5. One status write, guarded by the resourceVersion just read.
	if !equality.Semantic.DeepEqual(stored.Status, updated.Status) {
		if err := c.kubeClient.Status().Patch(ctx, updated, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return conflictOr(fmt.Errorf("patching status of EC2NodeClass %s: %w", nodeClass.Name, err))
		}
		ready := meta.FindStatusCondition(updated.Status.Conditions, v1.ConditionTypeReady)
		log.FromContext(ctx).V(1).Info("Updated EC2NodeClass status", "ready", ready.Status, "reason", ready.Reason)
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	// 6. Refresh: selectors may match other resources over time.
	return reconcile.Result{RequeueAfter: RefreshInterval}, nil
}

// patchMetadata adds the finalizer and sets the hash annotations.
func (c *Controller) patchMetadata(ctx context.Context, nodeClass *v1.EC2NodeClass) error {
	stored := nodeClass.DeepCopy()
	controllerutil.AddFinalizer(nodeClass, Finalizer)
	annotations := nodeClass.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1.AnnotationEC2NodeClassHash] = Hash(nodeClass)
	annotations[v1.AnnotationEC2NodeClassHashVersion] = HashVersion
	nodeClass.SetAnnotations(annotations)
	if equality.Semantic.DeepEqual(stored.ObjectMeta, nodeClass.ObjectMeta) {
		return nil
	}
	if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching finalizer and hash of EC2NodeClass %s: %w", nodeClass.Name, err)
	}
	return nil
}

// resolve fills status from AWS and sets each dependent condition. It
// returns the transient errors; the parts they hit keep their earlier
// status and condition.
func (c *Controller) resolve(ctx context.Context, nc *v1.EC2NodeClass) []error {
	var errs []error
	apply := func(condType string, v verdict, err error, onSuccess func()) {
		if err != nil {
			errs = append(errs, fmt.Errorf("resolving %s: %w", condType, err))
			c.keepOrUnknown(nc, condType, err)
			return
		}
		c.set(nc, condType, v)
		onSuccess()
	}
	// 3a. Subnets.
	subnets, err := c.deps.Subnets.List(ctx, nc.Spec.SubnetSelectorTerms)
	v, err := subnetsVerdict(len(subnets), err)
	apply(v1.ConditionTypeSubnetsReady, v, err, func() { nc.Status.Subnets = subnetStatus(subnets) })
	// 3b. Security groups.
	groups, err := c.deps.SecurityGroups.List(ctx, nc.Spec.SecurityGroupSelectorTerms)
	v, err = securityGroupsVerdict(len(groups), err)
	apply(v1.ConditionTypeSecurityGroupsReady, v, err, func() { nc.Status.SecurityGroups = securityGroupStatus(groups) })
	// 3c. AMIs.
	amis, err := c.deps.AMIs.List(ctx, nc)
	v, err = amisVerdict(len(amis), err)
	apply(v1.ConditionTypeAMIsReady, v, err, func() { nc.Status.AMIs = amis })
	// 3d. Instance profile. A profile that failed to get its role is still
	// the class's (Delete finds it by name), but not usable for launches.
	profile, err := c.deps.InstanceProfiles.Resolve(ctx, nc)
	v, err = instanceProfileVerdict(err)
	apply(v1.ConditionTypeInstanceProfileReady, v, err, func() {
		nc.Status.InstanceProfile = ""
		if v.Status == metav1.ConditionTrue {
			nc.Status.InstanceProfile = profile
		}
	})
	// 3e. Capacity reservations. None selected is fine: the class then
	//     launches on-demand and spot only.
	var reservations []v1.CapacityReservation
	err = nil
	if c.deps.CapacityReservations != nil && len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		reservations, err = c.deps.CapacityReservations.List(ctx, nc.Spec.CapacityReservationSelectorTerms)
	}
	apply(v1.ConditionTypeCapacityReservationsReady, ok(v1.ConditionTypeCapacityReservationsReady), err, func() {
		nc.Status.CapacityReservations = reservations
	})
	// 3f. What admission cannot check.
	family := Family(nc)
	var userDataErr, cidrErr error
	if c.deps.ValidateUserData != nil && nc.Spec.UserData != nil && family != "" {
		userDataErr = c.deps.ValidateUserData(family, *nc.Spec.UserData)
	}
	if family == v1.AMIFamilyAL2023 && c.deps.ClusterCIDR != nil {
		_, cidrErr = c.deps.ClusterCIDR.Resolve(ctx)
	}
	v, err = validationVerdict(family, userDataErr, cidrErr)
	c.set(nc, v1.ConditionTypeValidationSucceeded, v)
	if err != nil {
		errs = append(errs, fmt.Errorf("resolving %s: %w", v1.ConditionTypeValidationSucceeded, err))
	}
	return errs
}

// set records a verdict as a condition of the class's current generation.
func (c *Controller) set(nc *v1.EC2NodeClass, condType string, v verdict) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: condType, Status: v.Status, Reason: v.Reason, Message: v.Message,
		ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
}

// keepOrUnknown leaves an earlier verdict alone after a transient failure:
// an AWS hiccup should not stop launches. With no earlier verdict the
// condition becomes Unknown.
func (c *Controller) keepOrUnknown(nc *v1.EC2NodeClass, condType string, err error) {
	if meta.FindStatusCondition(nc.Status.Conditions, condType) != nil {
		return
	}
	c.set(nc, condType, verdict{Status: metav1.ConditionUnknown, Reason: ReasonResolutionFailed, Message: err.Error()})
}

// finalize releases what the class owns once no NodeClaim uses it.
func (c *Controller) finalize(ctx context.Context, nodeClass *v1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nodeClass, Finalizer) {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	// 1. Wait until no NodeClaim refers to the class.
	claims, err := c.nodeClaimsOf(ctx, nodeClass.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(claims) > 0 {
		if c.deps.Recorder != nil {
			c.deps.Recorder.Eventf(nodeClass, corev1.EventTypeNormal, EventWaitingOnNodeClaimTermination,
				"Waiting on NodeClaim termination for %s", strings.Join(claims, ", "))
		}
		logger.V(1).Info("Waiting on NodeClaim termination", "nodeClaims", len(claims))
		return reconcile.Result{RequeueAfter: waitInterval}, nil
	}
	// 2. Launch templates made for the class.
	if c.deps.DeleteLaunchTemplates != nil {
		if err := c.deps.DeleteLaunchTemplates(ctx, nodeClass.Name); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting launch templates of EC2NodeClass %s: %w", nodeClass.Name, err)
		}
	}
	// 3. The owned instance profile, whatever the spec says now.
	if err := c.deps.InstanceProfiles.Delete(ctx, nodeClass); err != nil {
		return reconcile.Result{}, fmt.Errorf("deleting instance profile of EC2NodeClass %s: %w", nodeClass.Name, err)
	}
	// 4. Let the class go.
	stored := nodeClass.DeepCopy()
	controllerutil.RemoveFinalizer(nodeClass, Finalizer)
	if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return conflictOr(client.IgnoreNotFound(fmt.Errorf("removing finalizer of EC2NodeClass %s: %w", nodeClass.Name, err)))
	}
	logger.V(1).Info("Finalized EC2NodeClass")
	return reconcile.Result{}, nil
}

// nodeClaimsOf lists the names of the NodeClaims that refer to the class.
func (c *Controller) nodeClaimsOf(ctx context.Context, name string) ([]string, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var out []string
	for i := range list.Items {
		if refersTo(list.Items[i].Spec.NodeClassRef, name) {
			out = append(out, list.Items[i].Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// refersTo reports whether ref names the EC2NodeClass name. A reference
// without a kind (never admitted, but cheap to allow) counts.
func refersTo(ref *karpv1.NodeClassReference, name string) bool {
	if ref == nil || ref.Name != name {
		return false
	}
	group, _, _ := strings.Cut(ref.Group, "/")
	return (ref.Kind == "" || ref.Kind == "EC2NodeClass") && (group == "" || group == v1.Group)
}

// nodeClassOf maps a NodeClaim to the EC2NodeClass it refers to.
func nodeClassOf(_ context.Context, obj client.Object) []reconcile.Request {
	nc, ok := obj.(*karpv1.NodeClaim)
	if !ok || nc.Spec.NodeClassRef == nil || !refersTo(nc.Spec.NodeClassRef, nc.Spec.NodeClassRef.Name) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}}}
}

// notStatusOnly ignores updates that touch only the status (our own writes).
func notStatusOnly() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	}}
}

// conflictOr turns a lost optimistic-lock race into a quick requeue and
// returns any other error.
func conflictOr(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	return reconcile.Result{}, err
}

// subnetStatus sorts subnets by zone, then by available IP addresses (most
// first), then ID: a launch takes the first subnet of each zone, so it goes
// to the one with the most room, as Karpenter's does, and a subnet running
// out of addresses loses its place at the next refresh.
func subnetStatus(subnets []ec2types.Subnet) []v1.Subnet {
	sorted := slices.Clone(subnets)
	slices.SortFunc(sorted, func(a, b ec2types.Subnet) int {
		return cmp.Or(
			cmp.Compare(aws.ToString(a.AvailabilityZone), aws.ToString(b.AvailabilityZone)),
			cmp.Compare(aws.ToInt32(b.AvailableIpAddressCount), aws.ToInt32(a.AvailableIpAddressCount)),
			cmp.Compare(aws.ToString(a.SubnetId), aws.ToString(b.SubnetId)),
		)
	})
	out := make([]v1.Subnet, 0, len(sorted))
	for _, s := range sorted {
		out = append(out, v1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)})
	}
	return out
}

// securityGroupStatus sorts security groups by ID.
func securityGroupStatus(groups []ec2types.SecurityGroup) []v1.SecurityGroup {
	out := make([]v1.SecurityGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, v1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
