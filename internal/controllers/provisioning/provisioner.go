package provisioning

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cachedpods"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
	"github.com/dovetail-autoscaler/dovetail/internal/runaway"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// Options tune provisioning.
type Options struct {
	// BatchIdleDuration closes a batch when no pod arrived for this long.
	BatchIdleDuration time.Duration
	// BatchMaxDuration closes a batch this long after it opened.
	BatchMaxDuration time.Duration
	// Simulator tunes the scheduling simulation.
	Simulator simulator.Options
	// LaunchBackoff and MaxLaunchBackoff bound the runaway breaker's
	// backoff for pods whose last node went unused (zero: 1 minute and 1
	// hour).
	LaunchBackoff, MaxLaunchBackoff time.Duration
	// DryRun is shadow mode: every pass's plan is published (events,
	// dovetail_shadow_* metrics, logs) and nothing is created or nominated.
	DryRun bool
	// EarlyProvisioning (feature gate EarlyProvisioning, on by default) also
	// provisions the pods the kube-scheduler has not tried yet whose
	// siblings (podutil.SiblingKey) it has marked unschedulable, and the
	// replicas their ReplicaSet has yet to create (see anticipation), and
	// lets only a group's first unschedulable pod open a batch. Karpenter waits
	// for the scheduler to mark each pod, which for a burst of thousands of
	// replicas takes as long as the scheduler takes to fail them all.
	EarlyProvisioning bool
}

// NominationWindow is how long a node counts as nominated after pods were
// planned onto it: at least 10 s, and twice the max batch window.
func (o Options) NominationWindow() time.Duration {
	return max(2*o.BatchMaxDuration, 10*time.Second)
}

// unconfirmedClaimMaxAge is how long a NodeClaim this process created stays
// in the model without the informer delivering it (the chaos suite saw
// informers lag about 50 s after API server restarts).
const unconfirmedClaimMaxAge = 2 * time.Minute

// Provisioner turns batches of pending pods into NodeClaims.
type Provisioner struct {
	clock         clock.Clock
	kubeClient    client.Client
	cluster       *state.Cluster
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	metrics       *metrics.Metrics
	batcher       *Batcher
	// breaker stops launch loops: no new node for pods of a shape whose
	// last node went unused (see package runaway).
	breaker *runaway.Breaker
	opts    Options
	// shadow publishes the decisions of shadow mode and of shadow NodePools.
	shadow *shadowPublisher
	// anticipation remembers the ReplicaSets whose missing replicas a pass
	// has provisioned for (EarlyProvisioning).
	anticipation *anticipation
	// podCache is the manager's informer cache, set by Register: a pass
	// reads every pod from it without copying them (package cachedpods).
	// Without it (a provisioner never registered) pods are read through
	// kubeClient.
	podCache cache.Cache
}

// podReader is where a pass reads every pod from.
func (p *Provisioner) podReader() client.Reader {
	if p.podCache != nil {
		return p.podCache
	}
	return p.kubeClient
}

// NewProvisioner returns a Provisioner; add it to a manager with Register.
func NewProvisioner(clk clock.Clock, kubeClient client.Client, cluster *state.Cluster, cp cloudprovider.CloudProvider,
	recorder events.Recorder, m *metrics.Metrics, opts Options) *Provisioner {
	return &Provisioner{
		clock: clk, kubeClient: kubeClient, cluster: cluster, cloudProvider: cp, recorder: recorder, metrics: m,
		batcher: NewBatcher(clk, opts.BatchIdleDuration, opts.BatchMaxDuration), opts: opts,
		breaker:      runaway.New(clk, opts.LaunchBackoff, opts.MaxLaunchBackoff),
		shadow:       newShadowPublisher(recorder, m),
		anticipation: newAnticipation(),
	}
}

// Trigger asks for a provisioning pass soon.
func (p *Provisioner) Trigger() { p.batcher.Trigger() }

// Start runs the provisioning loop until ctx ends. It implements
// manager.Runnable; only the leader runs it.
func (p *Provisioner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("provisioner")
	ctx = log.IntoContext(ctx, logger)
	for {
		// Poll now and then even without triggers, so that a missed event
		// never strands a pending pod.
		if !p.batcher.Wait(ctx, 10*time.Second) {
			if ctx.Err() != nil {
				return nil
			}
		}
		if err := p.Reconcile(ctx); err != nil {
			logger.Error(err, "Provisioning")
		}
	}
}

// NeedLeaderElection makes the loop run on the leader only.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Reconcile runs one provisioning pass: simulate the pending pods against the
// cluster and create the NodeClaims the plan calls for.
func (p *Provisioner) Reconcile(ctx context.Context) error {
	// 1. Take no decision while the model lags the API server.
	synced, err := p.cluster.Synced(ctx, p.kubeClient)
	if err != nil {
		return err
	}
	p.cluster.ForgetUnconfirmedNodeClaims(unconfirmedClaimMaxAge)
	if !synced {
		log.FromContext(ctx).V(1).Info("Waiting for cluster state to sync before provisioning")
		p.batcher.Trigger()
		return nil
	}
	live, shadowed, err := p.schedule(ctx)
	if err != nil {
		return err
	}
	// 2. Publish what shadow mode or the shadow NodePools would do (an
	// empty decision clears the shadow metrics), then act on the rest.
	p.shadow.publish(ctx, shadowed)
	if live == nil {
		return nil
	}
	return p.Launch(ctx, live.plan, live.pools)
}

// decision is a plan and the NodePools it may launch from, by name.
type decision struct {
	plan  *simulator.Plan
	pools map[string]*v1.NodePool
	// shadowOnly, when set, limits what is published to the NodeClaims of
	// these pools and the pods planned onto them (per-NodePool shadow).
	shadowOnly map[string]bool
}

// Schedule simulates the pending pods and returns the plan (nil when there is
// nothing to do) and the NodePools it used, by name. Shadow NodePools take
// no part in it; in shadow mode (DryRun) it is nil.
func (p *Provisioner) Schedule(ctx context.Context) (*simulator.Plan, map[string]*v1.NodePool, error) {
	live, _, err := p.schedule(ctx)
	if err != nil || live == nil {
		return nil, nil, err
	}
	return live.plan, live.pools, nil
}

// schedule simulates the pending pods. The live decision uses every ready
// NodePool that is not shadow-only (none in shadow mode); the shadow one,
// computed only when there is something to shadow, uses every ready
// NodePool, as if all were live, and is published, never carried out.
func (p *Provisioner) schedule(ctx context.Context) (live, shadowed *decision, err error) {
	start := p.clock.Now()
	defer func() {
		p.metrics.SchedulingDuration.WithLabelValues("provisioner").Observe(p.clock.Since(start).Seconds())
	}()

	// 1. NodePools that may launch, with their instance types.
	pools, byName, err := p.nodePools(ctx)
	if err != nil {
		return nil, nil, err
	}
	livePools, liveByName, shadowPools := splitShadow(pools, p.opts.DryRun)
	// 2. Snapshot the machines before listing pods: a pod that binds between
	// the two reads is then seen pending on a node that has room for it
	// (undershoot), never twice.
	snapshot := p.cluster.Snapshot(nil, pools)
	pods, err := p.pendingPods(ctx, snapshot)
	if err != nil {
		return nil, nil, err
	}
	if len(pods) == 0 {
		p.metrics.SchedulerQueueDepth.WithLabelValues("provisioner").Set(0)
		p.metrics.UnschedulablePodsCount.WithLabelValues("provisioner").Set(0)
		for _, pool := range pools {
			p.metrics.LaunchBlockedPods.WithLabelValues(pool.NodePool.Name).Set(0)
		}
		return nil, nil, nil
	}
	snapshot.Pods = pods
	snapshot.Refused = p.cluster.Refused(pods)
	snapshot.Deferred = deferredOf(pods)
	if err := p.addVolumesAndNamespaces(ctx, snapshot); err != nil {
		return nil, nil, err
	}
	// 3. Simulate: the shadow decision on every pool, the live one without
	// the shadow pools.
	if p.opts.DryRun || len(shadowPools) > 0 {
		plan := simulator.Simulate(snapshot, p.opts.Simulator)
		shadowed = &decision{plan: plan, pools: byName}
		if !p.opts.DryRun {
			shadowed.shadowOnly = shadowPools
		}
		if p.opts.DryRun {
			p.observePlan(ctx, plan, pods, start)
			return nil, shadowed, nil
		}
	}
	liveSnapshot := *snapshot
	liveSnapshot.NodePools = livePools
	plan := simulator.Simulate(&liveSnapshot, p.opts.Simulator)
	p.observePlan(ctx, plan, pods, start)
	return &decision{plan: plan, pools: liveByName}, shadowed, nil
}

// observePlan sets the scheduler metrics of a plan and logs it. The
// metrics count the pods that exist, not the stand-ins for replicas not
// created yet.
func (p *Provisioner) observePlan(ctx context.Context, plan *simulator.Plan, pods []*corev1.Pod, start time.Time) {
	existing := len(realPods(pods))
	unschedulable := 0
	for _, u := range plan.Unschedulable {
		if !IsAnticipated(u.Pod) {
			unschedulable++
		}
	}
	p.metrics.SchedulerQueueDepth.WithLabelValues("provisioner").Set(float64(existing))
	p.metrics.UnschedulablePodsCount.WithLabelValues("provisioner").Set(float64(unschedulable))
	log.FromContext(ctx).V(1).Info("Computed scheduling plan", "pods", existing, "anticipatedReplicas", len(pods)-existing,
		"newNodeClaims", len(plan.NewNodeClaims), "placedOnExisting", len(plan.Placements), "unschedulable", unschedulable,
		"duration", p.clock.Since(start).String(), "dryRun", p.opts.DryRun)
}

// splitShadow separates the shadow-only NodePools from the live ones. In
// shadow mode every pool is shadowed and none is live.
func splitShadow(pools []simulator.NodePool, dryRun bool) (live []simulator.NodePool, liveByName map[string]*v1.NodePool, shadowed map[string]bool) {
	liveByName = map[string]*v1.NodePool{}
	shadowed = map[string]bool{}
	for _, pool := range pools {
		if dryRun || shadow.IsShadow(pool.NodePool) {
			shadowed[pool.NodePool.Name] = true
			continue
		}
		live = append(live, pool)
		liveByName[pool.NodePool.Name] = pool.NodePool
	}
	return live, liveByName, shadowed
}

// nodePools lists the NodePools that are ready to launch, in weight order,
// with the instance types their cloud provider offers.
func (p *Provisioner) nodePools(ctx context.Context) ([]simulator.NodePool, map[string]*v1.NodePool, error) {
	list := &v1.NodePoolList{}
	if err := p.kubeClient.List(ctx, list); err != nil {
		return nil, nil, fmt.Errorf("listing nodepools: %w", err)
	}
	var ready []*v1.NodePool
	for i := range list.Items {
		if msg, invalid := shadow.InvalidAnnotation(&list.Items[i]); invalid {
			p.recorder.Publish(invalidShadowAnnotationEvent(&list.Items[i], msg))
		}
		// A static pool (spec.replicas) launches only through nodepool.static.
		if nodepoolutil.IsReady(&list.Items[i]) && !list.Items[i].IsStatic() {
			ready = append(ready, &list.Items[i])
		}
	}
	nodepoolutil.SortByWeight(ready)
	pools := make([]simulator.NodePool, 0, len(ready))
	byName := make(map[string]*v1.NodePool, len(ready))
	for _, np := range ready {
		types, err := p.cloudProvider.GetInstanceTypes(ctx, np)
		if err == nil && len(types) == 0 {
			err = errors.New("the cloud provider returned no instance types")
		}
		if err != nil {
			p.recorder.Publish(noInstanceTypesEvent(np, err))
			log.FromContext(ctx).Error(err, "Skipping NodePool", "NodePool", klog.KObj(np))
			continue
		}
		pools = append(pools, simulator.NodePool{NodePool: np, InstanceTypes: types})
		byName[np.Name] = np
	}
	return pools, byName, nil
}

// pendingPods are the pods the kube-scheduler could not place, with
// EarlyProvisioning their siblings it has not tried yet and stand-ins for
// the replicas their ReplicaSet has yet to create (see anticipation), plus the
// reschedulable pods of machines being deleted (so that their replacement
// capacity launches while they drain).
func (p *Provisioner) pendingPods(ctx context.Context, snapshot *simulator.Snapshot) ([]*corev1.Pod, error) {
	// Every pod of the cluster is read in place (the cache's own objects,
	// see package cachedpods) and the waiting pods taken are copied. The
	// pods of machines being deleted come from the model, which shares
	// them with the informer cache: the simulation reads pods and never
	// writes them.
	all, err := cachedpods.List(ctx, p.podReader())
	if err != nil {
		return nil, err
	}
	p.observeLaunches(all)
	// A waiting pod the model already counts on a machine (nominated to it,
	// by the kube-scheduler or by Dovetail) holds room there: simulating it
	// again would launch a second node for it. The kwok provider names a
	// node after its claim, so a pod can be counted on a claim whose Node
	// the model has not seen yet.
	counted := CountedPods(snapshot)
	var pods []*corev1.Pod
	if p.opts.EarlyProvisioning {
		pods = untriedSiblings(all, counted)
		// Shadow mode launches nothing, so the room stand-ins would size
		// would never exist for the replicas when they come.
		if !p.opts.DryRun {
			pods = append(pods, p.standIns(ctx, all)...)
		}
	}
	for _, pod := range all {
		if !podutil.IsUnschedulable(pod) || counted[pod.UID] {
			continue
		}
		// A pod nominated to a node that does not exist (its NodeClaim
		// failed before the node registered) needs capacity again; one
		// nominated to an existing node the model has not caught up with
		// waits for the next pass.
		if nnn := pod.Status.NominatedNodeName; nnn == "" || !p.cluster.HasNode(nnn) {
			pods = append(pods, pod.DeepCopy())
		}
	}
	return append(pods, PodsOfDeletingNodes(snapshot)...), nil
}

// standIns lists the ReplicaSets and returns the stand-ins for their
// replicas not created yet (see anticipation). A failed list costs only
// the anticipation, logged, never the pass: the informer waits for its
// first list at most replicaSetListTimeout (it would wait forever without
// the RBAC to list ReplicaSets).
func (p *Provisioner) standIns(ctx context.Context, pods []*corev1.Pod) []*corev1.Pod {
	listCtx, cancel := context.WithTimeout(ctx, replicaSetListTimeout)
	defer cancel()
	sets := &appsv1.ReplicaSetList{}
	if err := p.kubeClient.List(listCtx, sets, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Listing ReplicaSets; provisioning without their replicas not created yet")
		return nil
	}
	standIns, held := p.anticipation.standIns(sets.Items, pods, p.clock.Now())
	// The claims launched for a ReplicaSet's replicas with its stand-ins
	// stay nominated while its replicas are still to be created or bound,
	// pass after pass (a pass runs at least every 10 s).
	p.cluster.NominateNodesForPods(held, p.opts.NominationWindow())
	return standIns
}

// replicaSetListTimeout bounds a pass's wait for the ReplicaSet list.
const replicaSetListTimeout = 10 * time.Second

// untriedSiblings are the pods the kube-scheduler has not tried yet (see
// podutil.AwaitingFirstAttempt) and that no machine counts, whose siblings
// it has marked unschedulable: it would mark them too, one by one, and
// they are provisioned in the same pass instead. The simulation still
// places each on the room existing nodes have first.
func untriedSiblings(pods []*corev1.Pod, counted map[types.UID]bool) []*corev1.Pod {
	marked := map[string]bool{}
	for _, pod := range pods {
		// A pod nominated by preemption may yet be placed, and so may its
		// siblings.
		if podutil.IsProvisionable(pod) {
			if key, ok := podutil.SiblingKey(pod); ok {
				marked[key] = true
			}
		}
	}
	if len(marked) == 0 {
		return nil
	}
	var out []*corev1.Pod
	for _, pod := range pods {
		if counted[pod.UID] || !podutil.AwaitingFirstAttempt(pod) {
			continue
		}
		if key, ok := podutil.SiblingKey(pod); ok && marked[key] {
			out = append(out, pod.DeepCopy())
		}
	}
	return out
}

// CountedPods are the pods the snapshot's machines count (bound to them, or
// nominated to them and waiting).
func CountedPods(snapshot *simulator.Snapshot) map[types.UID]bool {
	counted := map[types.UID]bool{}
	for _, n := range snapshot.Nodes {
		for _, pod := range n.Pods {
			counted[pod.UID] = true
		}
	}
	return counted
}

// PodsOfDeletingNodes are the reschedulable pods of the snapshot's machines
// being deleted, which need capacity elsewhere.
func PodsOfDeletingNodes(snapshot *simulator.Snapshot) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, n := range snapshot.Nodes {
		if !n.MarkedForDeletion {
			continue
		}
		for _, pod := range n.Pods {
			if podutil.IsReschedulable(pod) && !podutil.ToleratesDisruptedTaint(pod) {
				pods = append(pods, pod)
			}
		}
	}
	return pods
}

// addVolumesAndNamespaces adds what volume topology and namespace selectors need.
func (p *Provisioner) addVolumesAndNamespaces(ctx context.Context, snapshot *simulator.Snapshot) error {
	pvcs := &corev1.PersistentVolumeClaimList{}
	pvs := &corev1.PersistentVolumeList{}
	classes := &storagev1.StorageClassList{}
	namespaces := &corev1.NamespaceList{}
	for _, l := range []client.ObjectList{pvcs, pvs, classes, namespaces} {
		if err := p.kubeClient.List(ctx, l); err != nil {
			return fmt.Errorf("listing %T: %w", l, err)
		}
	}
	for i := range pvcs.Items {
		snapshot.PersistentVolumeClaims = append(snapshot.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		snapshot.PersistentVolumes = append(snapshot.PersistentVolumes, &pvs.Items[i])
	}
	for i := range classes.Items {
		snapshot.StorageClasses = append(snapshot.StorageClasses, &classes.Items[i])
	}
	for i := range namespaces.Items {
		snapshot.Namespaces = append(snapshot.Namespaces, &namespaces.Items[i])
	}
	return nil
}

// Launch creates the plan's NodeClaims (in parallel), nominates pods, and
// tells every pod it could not help why.
func (p *Provisioner) Launch(ctx context.Context, plan *simulator.Plan, pools map[string]*v1.NodePool) error {
	logger := log.FromContext(ctx)
	window := p.opts.NominationWindow()
	// Hand the plan to the scheduler only when the pods differ: when they
	// all come from one workload, any placement is as good as the plan and
	// the hints would only cost a status write per pod.
	hint := workloads(plan) > 1
	// Pods planned onto a machine keep it nominated until they bind (or it
	// goes), not only for the window: a slow kube-scheduler must not let
	// disruption remove the node they wait for.
	// A stand-in for a replica not created yet (IsAnticipated) keeps its
	// machine nominated, and is neither planned, handed off nor told.
	placed := make([]string, 0, len(plan.Placements))
	for _, placement := range plan.Placements {
		if len(placed) == 0 || placed[len(placed)-1] != placement.Node {
			placed = append(placed, placement.Node)
		}
	}
	p.cluster.NominateNodesForPods(placed, window)
	for _, placement := range plan.Placements {
		key := []types.NamespacedName{client.ObjectKeyFromObject(placement.Pod)}
		if IsAnticipated(placement.Pod) {
			continue
		}
		p.cluster.PlanPods(placement.Node, key)
		if hint {
			p.cluster.HandOff(key)
		}
	}
	for _, u := range plan.Unschedulable {
		if IsAnticipated(u.Pod) {
			continue
		}
		p.cluster.PlanPods("", []types.NamespacedName{client.ObjectKeyFromObject(u.Pod)})
		p.recorder.Publish(failedSchedulingEvent(u.Pod, u.Reason))
	}
	claims := p.admit(ctx, plan.NewNodeClaims, pools)
	anticipated := map[types.UID]bool{}
	for _, claim := range claims {
		for _, rs := range standInOwners(claim.Pods) {
			anticipated[rs] = true
		}
	}
	errs := make([]error, len(claims))
	// Up to launchWorkers at once (the client's rate limiter paces them):
	// ten at a time took 12 s for a 5,000-pod plan's 334 claims on a busy
	// API server, and the last launches waited for it.
	workqueue.ParallelizeUntil(ctx, launchWorkers, len(claims), func(i int) {
		claim := claims[i]
		np := pools[claim.NodePool]
		nc := nodeclaimutil.FromPlan(claim, np)
		if err := p.kubeClient.Create(ctx, nc); err != nil {
			errs[i] = fmt.Errorf("creating nodeclaim for nodepool %s: %w", claim.NodePool, err)
			return
		}
		p.metrics.NodeClaimsCreated.WithLabelValues("provisioning", np.Name).Inc()
		p.cluster.AddCreatedNodeClaim(nc)
		pods := realPods(claim.Pods)
		if len(pods) > 0 {
			p.breaker.RecordLaunch(nc.Name, np.Name, pods)
		}
		p.cluster.NominateNodeForPod(nc.Name, window)
		// The replicas of a ReplicaSet this plan anticipated may be
		// created and bound after the window: later passes keep every
		// claim with one of them nominated until they are.
		for _, rs := range heldFor(claim.Pods, anticipated) {
			p.anticipation.hold(rs, nc.Name, p.clock.Now())
		}
		planned := make([]types.NamespacedName, 0, len(pods))
		for _, pod := range pods {
			planned = append(planned, client.ObjectKeyFromObject(pod))
		}
		p.cluster.PlanPods(nc.Name, planned)
		if hint {
			p.cluster.HandOff(planned)
		}
		logger.Info("Created NodeClaim", "NodeClaim", klog.KObj(nc), "NodePool", klog.KObj(np),
			"pods", len(pods), "anticipatedReplicas", len(claim.Pods)-len(pods), "requests", resourceString(claim.Requests),
			"instanceTypes", instanceTypeSummary(claim.InstanceTypes), "price", claim.Price)
		for _, pod := range pods {
			p.recorder.Publish(nominatedEvent(pod, "nodeclaim/"+nc.Name))
		}
	})
	return errors.Join(errs...)
}

// launchWorkers is how many NodeClaims a pass creates at once.
const launchWorkers = 100

// observeLaunches tells the runaway breaker which claims it tracks have
// initialized and which pods it tracks have bound or gone.
func (p *Provisioner) observeLaunches(pods []*corev1.Pod) {
	claims := map[string]runaway.ClaimState{}
	for _, n := range p.cluster.Nodes() {
		if n.NodeClaim != nil {
			// Initialized, not only registered: until then the pod cannot
			// be expected to have scheduled.
			claims[n.NodeClaim.Name] = runaway.ClaimState{Exists: true, Registered: n.Initialized()}
		}
	}
	p.breaker.Observe(func(name string) runaway.ClaimState { return claims[name] }, pods)
}

// admit asks the runaway breaker about each planned claim and returns those
// to launch. A claim every pod of which already had a node launched for it
// that initialized while the pod stayed pending (or whose shape is still
// backing off) is not launched: something the simulation cannot see keeps
// such pods off such nodes, and launching again would only repeat it.
func (p *Provisioner) admit(ctx context.Context, planned []*simulator.NewNodeClaim, pools map[string]*v1.NodePool) []*simulator.NewNodeClaim {
	blocked := make(map[string]int, len(pools))
	for name := range pools {
		blocked[name] = 0
	}
	out := make([]*simulator.NewNodeClaim, 0, len(planned))
	for _, claim := range planned {
		np := pools[claim.NodePool]
		decision := p.breaker.Admit(claim.NodePool, claim.Pods)
		for _, miss := range decision.Misses {
			p.metrics.LaunchBackoffs.WithLabelValues(claim.NodePool).Inc()
			log.FromContext(ctx).Info("Launch went unused, backing off for pods of this shape", "NodePool", klog.KRef("", claim.NodePool),
				"pod", miss.Pod, "NodeClaim", klog.KRef("", miss.NodeClaim), "misses", miss.Misses, "until", miss.Until)
			p.recorder.Publish(launchBackoffNodePoolEvent(np, miss))
		}
		if decision.Launch {
			out = append(out, claim)
			continue
		}
		for _, b := range decision.Blocked {
			if IsAnticipated(b.Pod) {
				continue
			}
			blocked[claim.NodePool]++
			p.recorder.Publish(launchBackoffPodEvent(b))
		}
	}
	for name, n := range blocked {
		p.metrics.LaunchBlockedPods.WithLabelValues(name).Set(float64(n))
	}
	return out
}

// workloads counts the distinct controllers (or lone pods) of the pods a
// plan places, on existing machines or new claims.
func workloads(plan *simulator.Plan) int {
	owners := map[types.UID]struct{}{}
	add := func(pod *corev1.Pod) {
		owner := pod.UID
		if ref := metav1.GetControllerOf(pod); ref != nil {
			owner = ref.UID
		}
		owners[owner] = struct{}{}
	}
	for _, placement := range plan.Placements {
		add(placement.Pod)
	}
	for _, claim := range plan.NewNodeClaims {
		for _, pod := range claim.Pods {
			add(pod)
		}
	}
	return len(owners)
}

func resourceString(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for name := range list {
		names = append(names, string(name))
	}
	sort.Strings(names)
	out := ""
	for i, name := range names {
		if i > 0 {
			out += ","
		}
		q := list[corev1.ResourceName(name)]
		out += name + "=" + q.String()
	}
	return out
}

// instanceTypeSummary names the cheapest options and how many there are.
func instanceTypeSummary(types []*cloudprovider.InstanceType) string {
	const shown = 3
	out := ""
	for i, it := range types {
		if i == shown {
			return fmt.Sprintf("%s and %d other(s)", out, len(types)-shown)
		}
		if i > 0 {
			out += ", "
		}
		out += it.Name
	}
	return out
}
