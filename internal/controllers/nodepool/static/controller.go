package static

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// Metric reasons of karpenter_nodeclaims_created_total and
// karpenter_nodeclaims_disrupted_total for static pools.
const (
	// CreatedReason labels the NodeClaims created to reach a static pool's replicas.
	CreatedReason = "static"
	// DisruptedReason labels the NodeClaims deleted because a static pool
	// has more than its replicas, as Karpenter's static deprovisioning names it.
	DisruptedReason = "overprovisioned"
)

// Recheck is how often a static pool is looked at again while it is not
// where it should be (a budget holds its scale-down, the model has not
// caught up, the pool is not ready, a limit caps it), and at most how
// long a settled pool goes unchecked.
const Recheck = 30 * time.Second

// Controller keeps every static NodePool at its replicas.
type Controller struct {
	clock         clock.Clock
	kubeClient    client.Client
	cluster       *state.Cluster
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	metrics       *metrics.Metrics

	mu sync.Mutex
	// deleted holds the claims this controller deleted, with their pool,
	// until the model shows them deleting or gone; they count as leaving
	// (see Decide).
	deleted map[types.UID]string
}

// NewController returns the static NodePool controller. kubeClient is the
// manager's cached client; cluster is the shared cluster-state model, which
// counts the pool's NodeClaims (including those just created that the
// cache has not delivered yet).
func NewController(clk clock.Clock, kubeClient client.Client, cluster *state.Cluster, cloudProvider cloudprovider.CloudProvider,
	recorder events.Recorder, m *metrics.Metrics) *Controller {
	return &Controller{clock: clk, kubeClient: kubeClient, cluster: cluster, cloudProvider: cloudProvider, recorder: recorder, metrics: m,
		deleted: map[types.UID]string{}}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "nodepool.static" }

// Register watches static NodePools, and the NodeClaims of any pool (a
// claim created or deleted changes the count).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&v1.NodePool{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.(*v1.NodePool).IsStatic()
		}))).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			if pool := obj.GetLabels()[v1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pool}}}
			}
			return nil
		})).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("building %s controller: %w", c.Name(), err)
	}
	return nil
}

// Reconcile brings a static pool to its replicas.
func (c *Controller) Reconcile(ctx context.Context, np *v1.NodePool) (reconcile.Result, error) {
	// 1. Dynamic pools are the provisioner's; a pool being deleted takes
	// its claims with it.
	if !np.IsStatic() || np.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodePool", klog.KObj(np)))
	// 2. Count from a model that holds every claim the cache holds, or
	// the count could be short and launch a claim too many.
	synced, err := c.cluster.Synced(ctx, c.kubeClient)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("checking cluster state: %w", err)
	}
	if !synced {
		log.FromContext(ctx).V(1).Info("Waiting for cluster state to sync before keeping the static NodePool's replicas")
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	machines := c.poolMachines(np.Name)
	d := Decide(np, machines, c.deletedFrom(np.Name, machines), c.clock.Now())
	// 3. A shadow pool (dovetail.dev/shadow) is only reported on: its
	// claims are neither created nor deleted here.
	if shadow.IsShadow(np) {
		log.FromContext(ctx).Info("Would keep the static NodePool's replicas (shadow)", "replicas", d.Replicas,
			"current", d.Current, "create", d.Create, "delete", len(d.Delete), "held", d.Held)
		return reconcile.Result{RequeueAfter: Recheck}, nil
	}
	if d.Limited() {
		c.recorder.Publish(limitedEvent(np, d))
	}
	switch {
	case d.Create > 0:
		return c.scaleUp(ctx, np, d)
	case len(d.Delete) > 0 || d.Held > 0:
		return c.scaleDown(ctx, np, d)
	}
	return reconcile.Result{RequeueAfter: Recheck}, nil
}

// deletedFrom returns the claims of the pool this controller deleted that
// the model still shows staying, and forgets the pool's others (the model
// shows them deleting, or they are gone). Reconciles of one pool never run
// at once, so no other pass of the pool relies on an entry forgotten here.
func (c *Controller) deletedFrom(pool string, machines []*machine.Machine) map[types.UID]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	staying := map[types.UID]bool{}
	for _, m := range machines {
		if !m.Deleting() {
			staying[m.NodeClaim.UID] = true
		}
	}
	out := map[types.UID]bool{}
	for uid, of := range c.deleted {
		switch {
		case of != pool:
		case staying[uid]:
			out[uid] = true
		default:
			delete(c.deleted, uid)
		}
	}
	return out
}

// poolMachines are the model's machines of the pool.
func (c *Controller) poolMachines(pool string) []*machine.Machine {
	var out []*machine.Machine
	for _, m := range c.cluster.Nodes() {
		if m.NodeClaim != nil && m.NodePoolName() == pool {
			out = append(out, m)
		}
	}
	return out
}

// scaleUp creates the missing NodeClaims, each of the pool's cheapest
// launchable instance types, in parallel.
func (c *Controller) scaleUp(ctx context.Context, np *v1.NodePool, d Decision) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	if !nodepoolutil.IsReady(np) {
		logger.V(1).Info("Waiting for the static NodePool to be ready before launching", "missing", d.Create)
		return reconcile.Result{RequeueAfter: Recheck}, nil
	}
	types, err := c.cloudProvider.GetInstanceTypes(ctx, np)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err)
	}
	claim, err := nodeclaimutil.ForStaticPool(simulator.NodePool{NodePool: np, InstanceTypes: types}, simulator.DefaultMaxInstanceTypes)
	if err != nil {
		c.recorder.Publish(noInstanceTypesEvent(np, err))
		logger.Error(err, "Cannot launch for static NodePool")
		return reconcile.Result{RequeueAfter: Recheck}, nil
	}
	errs := make([]error, d.Create)
	workqueue.ParallelizeUntil(ctx, 10, int(d.Create), func(i int) {
		nc := nodeclaimutil.FromPlan(claim, np)
		if err := c.kubeClient.Create(ctx, nc); err != nil {
			errs[i] = fmt.Errorf("creating nodeclaim for static nodepool %s: %w", np.Name, err)
			return
		}
		c.cluster.AddCreatedNodeClaim(nc)
		c.metrics.NodeClaimsCreated.WithLabelValues(CreatedReason, np.Name).Inc()
		logger.Info("Created NodeClaim for static NodePool", "NodeClaim", klog.KObj(nc), "replicas", d.Replicas,
			"nodeClaims", d.Current, "instanceTypes", len(claim.InstanceTypes), "cheapest", claim.InstanceTypes[0].Name, "price", claim.Price)
	})
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	c.recorder.Publish(scaledUpEvent(np, d))
	return reconcile.Result{RequeueAfter: Recheck}, nil
}

// scaleDown deletes the surplus NodeClaims Decide chose; the termination
// controllers drain their nodes (PodDisruptionBudgets and
// karpenter.sh/do-not-disrupt respected until terminationGracePeriod) and
// terminate the instances, as for any deleted NodeClaim.
func (c *Controller) scaleDown(ctx context.Context, np *v1.NodePool, d Decision) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	if d.Held > 0 {
		c.recorder.Publish(budgetHeldEvent(np, d))
		logger.V(0).Info("Disruption budgets hold part of the static NodePool's scale-down", "replicas", d.Replicas,
			"nodeClaims", d.Current, "held", d.Held, "allowed", d.Budget, "budgetError", errString(d.BudgetErr))
	}
	var errs []error
	for _, m := range d.Delete {
		nc := m.NodeClaim
		err := c.kubeClient.Delete(ctx, nc, client.Preconditions{UID: &nc.UID})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s of static nodepool %s: %w", nc.Name, np.Name, err))
			continue
		}
		c.cluster.MarkForDeletion(firstNonEmpty(m.ProviderID(), nc.Name))
		c.mu.Lock()
		c.deleted[nc.UID] = np.Name
		c.mu.Unlock()
		c.metrics.NodeClaimsDisrupted.WithLabelValues(DisruptedReason, np.Name).Inc()
		c.recorder.Publish(scaleDownEvents(m, d)...)
		logger.V(0).Info("Deleted NodeClaim of static NodePool scaled down", "NodeClaim", klog.KObj(nc), "Node", klog.KRef("", nodeName(m)),
			"replicas", d.Replicas, "nodeClaims", d.Current, "pods", len(m.Pods))
	}
	return reconcile.Result{RequeueAfter: Recheck}, errors.Join(errs...)
}

func nodeName(m *machine.Machine) string {
	if m.Node != nil {
		return m.Node.Name
	}
	return ""
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
