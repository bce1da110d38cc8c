package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// Options tune the lifecycle controller.
type Options struct {
	// LaunchTimeout deletes a claim whose instance has not launched this long after creation.
	LaunchTimeout time.Duration
	// RegistrationTimeout deletes a claim whose node has not registered this long after launch.
	RegistrationTimeout time.Duration
}

// DefaultOptions are Karpenter's timeouts: 5 minutes to launch, 15 to register.
func DefaultOptions() Options {
	return Options{LaunchTimeout: 5 * time.Minute, RegistrationTimeout: 15 * time.Minute}
}

// Controller reconciles the lifecycle of NodeClaims.
type Controller struct {
	clock      clock.Clock
	kubeClient client.Client
	// apiReader reads from the API server, not the cache: registration
	// reads the Node again through it when a patch built from the cached
	// Node was refused because the Node had changed.
	apiReader     client.Reader
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	metrics       *metrics.Metrics
	opts          Options
	nominator     Nominator
	launches      *launchCache
	superseded    *supersededVersions
}

// Nominator hands the plan for a registering Node to the kube-scheduler
// (the pod.handoff controller implements it).
type Nominator interface {
	// NominatePlanned nominates the pods planned onto the Node of that
	// NodeClaim.
	NominatePlanned(ctx context.Context, node *corev1.Node, claim string)
}

// NewController returns a lifecycle controller. apiReader reads from the
// API server without the cache (the manager's APIReader); nil reads through
// kubeClient. nominator may be nil: then registration nominates no pods.
func NewController(clk clock.Clock, kubeClient client.Client, apiReader client.Reader, cp cloudprovider.CloudProvider, recorder events.Recorder, m *metrics.Metrics, nominator Nominator, opts Options) *Controller {
	if apiReader == nil {
		apiReader = kubeClient
	}
	return &Controller{clock: clk, kubeClient: kubeClient, apiReader: apiReader, cloudProvider: cp, recorder: recorder, metrics: m, nominator: nominator, opts: opts,
		launches: newLaunchCache(clk), superseded: newSupersededVersions(clk)}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodeclaim.lifecycle" }

// Reconcile moves one NodeClaim along its lifecycle.
func (c *Controller) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	// 1. Deleted claims belong to the termination controller.
	if nc.DeletionTimestamp != nil {
		c.launches.forget(nc.UID)
		c.superseded.forget(nc.UID)
		return reconcile.Result{}, nil
	}
	// A copy older than this controller's last write to the claim: the
	// cache has not delivered the write yet, and its watch event will bring
	// the claim back (the requeue is a safety net).
	if c.superseded.isSuperseded(nc.UID, nc.ResourceVersion) {
		return reconcile.Result{RequeueAfter: conflictRequeueDelay}, nil
	}
	// 2. The finalizer goes on before anything is launched, so that an
	//    instance can never outlive its claim unnoticed. The claims Dovetail
	//    creates carry it already (nodeclaimutil.FromPlan); this adds it to
	//    others (created by hand, or by an older version).
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		stored := nc.DeepCopy()
		controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding finalizer: %w", err))
		}
		c.superseded.wrote(nc.UID, stored.ResourceVersion, nc.ResourceVersion)
	}
	// 3. Run every phase in order on a working copy and join their errors,
	//    as Karpenter does: a phase that fails does not stop the next ones,
	//    so a claim whose launch keeps failing still reaches liveness, which
	//    deletes it after its timeout. Only a deleted claim ends the pass:
	//    there is nothing left to write, but the errors, the deletion's
	//    included, are returned so that a failed deletion is retried.
	stored := nc.DeepCopy()
	var results []reconcile.Result
	var errs []error
	for _, phase := range []func(context.Context, *v1.NodeClaim) (reconcile.Result, bool, error){
		c.launch, c.register, c.initialize, c.liveness,
	} {
		result, deleted, err := phase(ctx, nc)
		if err != nil {
			errs = append(errs, err)
		}
		if deleted {
			return reconcile.Result{}, errors.Join(errs...)
		}
		results = append(results, result)
	}
	setReady(nc, metav1.NewTime(c.clock.Now()))
	// 4. Write metadata (labels from the launched instance) and status. A
	//    write refused because the claim changed since it was read is retried
	//    on the newer claim: that change (the watch delivers it) is another
	//    controller's, and writing over it would erase it.
	conflicted, err := c.persist(ctx, stored, nc)
	switch {
	case err != nil:
		errs = append(errs, err)
	case conflicted:
		results = append(results, reconcile.Result{RequeueAfter: conflictRequeueDelay})
	default:
		c.reportTransitions(ctx, stored, nc)
	}
	return minResult(results), errors.Join(errs...)
}

// reportTransitions logs and counts the steps this pass recorded (the
// claim Registered, Initialized), once the status that records them is
// written: a pass whose write conflicted runs again on the newer claim,
// which does not show the step yet, and would otherwise count it twice
// (three or four times per claim in a busy scale-out).
func (c *Controller) reportTransitions(ctx context.Context, stored, nc *v1.NodeClaim) {
	pool := nc.Labels[v1.NodePoolLabelKey]
	became := func(condition string) bool { return !isTrue(stored, condition) && isTrue(nc, condition) }
	if became(v1.ConditionTypeRegistered) {
		c.metrics.NodeClaimsRegistered.WithLabelValues(pool).Inc()
		c.metrics.NodesCreated.WithLabelValues(pool).Inc()
		log.FromContext(ctx).Info("Registered NodeClaim", "NodeClaim", klog.KObj(nc), "Node", klog.KRef("", nc.Status.NodeName))
	}
	if became(v1.ConditionTypeInitialized) {
		c.metrics.NodeClaimsInitialized.WithLabelValues(pool).Inc()
		log.FromContext(ctx).Info("Initialized NodeClaim", "NodeClaim", klog.KObj(nc), "Node", klog.KRef("", nc.Status.NodeName),
			"sinceCreation", c.clock.Since(nc.CreationTimestamp.Time).Round(100*time.Millisecond).String())
	}
}

// conflictRequeueDelay is how soon a claim whose write conflicted is
// reconciled again, should the watch event of the conflicting write be late.
const conflictRequeueDelay = time.Second

// persist patches the claim's metadata and status when they changed. Both
// patches carry the resourceVersion the pass read (the status patch the one
// its own metadata patch produced): status.conditions is a list that a merge
// patch replaces whole, so without the lock the patch would erase conditions
// other controllers wrote meanwhile (Drifted, Consolidatable,
// DisruptionReason). It reports whether a patch conflicted.
func (c *Controller) persist(ctx context.Context, stored, nc *v1.NodeClaim) (bool, error) {
	// The lock is the resourceVersion the pass read.
	version := stored.ResourceVersion
	if !equality.Semantic.DeepEqual(stored.Labels, nc.Labels) || !equality.Semantic.DeepEqual(stored.Annotations, nc.Annotations) {
		status := nc.Status.DeepCopy()
		patch, err := lockedPatch(
			claimDocument{Metadata: &claimMetadata{Labels: stored.Labels, Annotations: stored.Annotations}},
			claimDocument{Metadata: &claimMetadata{Labels: nc.Labels, Annotations: nc.Annotations}}, version)
		if err != nil {
			return false, err
		}
		if err := c.kubeClient.Patch(ctx, nc, patch); err != nil {
			if apierrors.IsConflict(err) {
				return true, nil
			}
			return false, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim metadata: %w", err))
		}
		nc.Status = *status
		c.superseded.wrote(nc.UID, version, nc.ResourceVersion)
		version = nc.ResourceVersion // our own write, not another's
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		patch, err := lockedPatch(claimDocument{Status: &stored.Status}, claimDocument{Status: &nc.Status}, version)
		if err != nil {
			return false, err
		}
		if err := c.kubeClient.Status().Patch(ctx, nc, patch); err != nil {
			if apierrors.IsConflict(err) {
				return true, nil
			}
			return false, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
		}
		c.superseded.wrote(nc.UID, version, nc.ResourceVersion)
	}
	return false, nil
}

// lockedPatch is the merge patch from before to after, locked to version
// (the API server refuses it with a conflict when the claim has moved past
// it): what a merge patch from the stored claim with the optimistic lock
// sends, computed on the part written (metadata or status) rather than on
// both whole claims, whose requirements list up to 600 instance types (the
// whole-claim diff was an eighth of the controller's allocations in a
// scale-out).
func lockedPatch(before, after claimDocument, version string) (client.Patch, error) {
	if after.Metadata == nil {
		after.Metadata = &claimMetadata{}
	}
	after.Metadata.ResourceVersion = version
	from, err := json.Marshal(before)
	if err != nil {
		return nil, fmt.Errorf("encoding nodeclaim: %w", err)
	}
	to, err := json.Marshal(after)
	if err != nil {
		return nil, fmt.Errorf("encoding nodeclaim: %w", err)
	}
	data, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, fmt.Errorf("computing the nodeclaim patch: %w", err)
	}
	return client.RawPatch(types.MergePatchType, data), nil
}

// claimDocument is the part of a NodeClaim a patch is computed on.
type claimDocument struct {
	Metadata *claimMetadata      `json:"metadata,omitempty"`
	Status   *v1.NodeClaimStatus `json:"status,omitempty"`
}

// claimMetadata is the metadata a patch writes, and the version it is
// locked to.
type claimMetadata struct {
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

// deleteClaim deletes the claim (its finalizer then terminates anything left).
func (c *Controller) deleteClaim(ctx context.Context, nc *v1.NodeClaim, reason string) error {
	if err := c.kubeClient.Delete(ctx, nc); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim: %w", err))
	}
	c.metrics.NodeClaimsDisrupted.WithLabelValues(reason, nc.Labels[v1.NodePoolLabelKey]).Inc()
	return nil
}

// minResult returns the soonest requeue of the phases.
func minResult(results []reconcile.Result) reconcile.Result {
	var out reconcile.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
	}
	return out
}

// Register wires the controller: NodeClaims, and Nodes mapped to their claim.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.claimsForNode)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 50}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}

// claimsForNode maps a Node to the NodeClaims with its provider ID.
func (c *Controller) claimsForNode(ctx context.Context, obj client.Object) []reconcile.Request {
	node := obj.(*corev1.Node)
	if node.Spec.ProviderID == "" {
		return nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
	}
	return requests
}
