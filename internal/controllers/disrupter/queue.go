package disrupter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// ReplacesAnnotationKey is set on a replacement NodeClaim to the names of
// the NodeClaims it replaces (comma-separated), so that a restarted
// controller finds its command again.
const ReplacesAnnotationKey = nodeclaimutil.ReplacesAnnotationKey

// ReplacementCountAnnotationKey records on each replacement how many its
// command launches.
const ReplacementCountAnnotationKey = nodeclaimutil.ReplacementCountAnnotationKey

const (
	// queuePoll is how often the queue checks on its commands.
	queuePoll = time.Second
	// unseenReplacement is how long a replacement may stay out of the
	// cache after it was created before it counts as deleted.
	unseenReplacement = time.Minute
)

// candidateRef is a node a command disrupts. condition is, for a repair,
// the condition label of karpenter_nodeclaims_unhealthy_disrupted_total.
type candidateRef struct {
	claim, node, providerID, pool string
	condition                     string
}

// command is a disruption in progress.
type command struct {
	id                    string
	reason                v1.DisruptionReason
	method                disruption.Method
	decision              disruption.Decision
	explanation           string
	candidates            []candidateRef
	replacements          []string
	seen                  map[string]bool
	nodeNames             map[string]string // replacement -> its Node, once registered
	deleted               map[string]bool   // candidates this command deleted
	started               time.Time
	starting, rollingBack bool
	rollbackWhy           string
	marked                bool
	// forced commands (repairs) delete their candidates when their
	// replacements fail, instead of rolling back; forcedWhy says why they
	// did not wait for them.
	forced    bool
	forcedWhy string
}

// Queue carries disruption commands out; see the package documentation.
type Queue struct {
	clock      clock.WithTicker
	kubeClient client.Client
	cluster    *state.Cluster
	recorder   events.Recorder
	metrics    *metrics.Metrics
	timeout    time.Duration
	nominate   time.Duration
	// repairs are the node.health controller's requests, read for the
	// condition of a repaired node; nil without node repair.
	repairs *health.Requests

	// work serialises everything that reads or changes a command:
	// StartCommand runs on the disruption controller's goroutine, the
	// steps on the queue's, and a command's fields are not locked.
	work     sync.Mutex
	mu       sync.Mutex
	commands map[string]*command  // by id
	finished map[string]time.Time // candidate NodeClaim -> when its command finished
	trigger  chan struct{}
}

// NewQueue returns an empty queue. Replacements not initialized within
// timeout roll their command back; they are nominated for nominate after
// launch, so that they are not consolidated before the pods arrive.
func NewQueue(clk clock.WithTicker, kubeClient client.Client, cluster *state.Cluster, recorder events.Recorder, m *metrics.Metrics,
	timeout, nominate time.Duration) *Queue {
	return &Queue{
		clock: clk, kubeClient: kubeClient, cluster: cluster, recorder: recorder, metrics: m, timeout: timeout, nominate: nominate,
		commands: map[string]*command{}, finished: map[string]time.Time{}, trigger: make(chan struct{}, 1),
	}
}

// Name identifies the queue.
func (q *Queue) Name() string { return "disruption.queue" }

// Register adds the queue's loop to the manager.
func (q *Queue) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(q)
}

// NeedLeaderElection makes the queue run on the leader only.
func (q *Queue) NeedLeaderElection() bool { return true }

// Start checks on the commands every second (or when one starts) until ctx ends.
func (q *Queue) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("disruption-queue"))
	for {
		if err := q.Reconcile(ctx); err != nil {
			log.FromContext(ctx).Error(err, "Carrying out disruption commands")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-q.trigger:
		case <-q.clock.After(queuePoll):
		}
	}
}

// Disrupting names the NodeClaims that queued commands disrupt.
func (q *Queue) Disrupting() map[string]bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]bool{}
	for _, cmd := range q.commands {
		for _, c := range cmd.candidates {
			out[c.claim] = true
		}
	}
	return out
}

// Replacements names the NodeClaims that queued commands launched.
func (q *Queue) Replacements() map[string]bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]bool{}
	for _, cmd := range q.commands {
		for _, r := range cmd.replacements {
			out[r] = true
		}
	}
	return out
}

// Len is the number of commands in progress.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.commands)
}

// reserve adds a command unless one of its candidates is already queued.
func (q *Queue) reserve(cmd *command) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, other := range q.commands {
		for _, a := range other.candidates {
			for _, b := range cmd.candidates {
				if a.claim == b.claim {
					return fmt.Errorf("nodeclaim %s is already being disrupted", a.claim)
				}
			}
		}
	}
	q.commands[cmd.id] = cmd
	return nil
}

func (q *Queue) remove(cmd *command) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.commands, cmd.id)
}

// StartCommand begins a command: it taints the candidates and records why,
// and launches the replacements. A command without replacements deletes
// its candidates at once.
func (q *Queue) StartCommand(ctx context.Context, dc *disruption.Command) error {
	// A shadow NodePool is never acted on; the loop leaves it out of live
	// decisions, and this guards against a command that slipped through.
	for _, c := range dc.Candidates {
		if shadow.IsShadow(c.NodePool) {
			return fmt.Errorf("refusing to disrupt node %s: NodePool %s is annotated %s", c.Name(), c.NodePool.Name, shadow.AnnotationKey)
		}
	}
	for _, r := range dc.Replacements {
		if shadow.IsShadow(r.NodePool) {
			return fmt.Errorf("refusing to launch a replacement from NodePool %s: it is annotated %s", r.NodePool.Name, shadow.AnnotationKey)
		}
	}
	now := q.clock.Now()
	cmd := &command{
		id: fmt.Sprintf("%s-%d", dc.Candidates[0].NodeClaimName(), now.UnixNano()), reason: dc.Reason, method: dc.Method,
		decision: dc.Decision(), explanation: dc.String(), started: now, starting: true,
		seen: map[string]bool{}, nodeNames: map[string]string{}, deleted: map[string]bool{},
		forced: dc.Method.Forced(),
	}
	for _, c := range dc.Candidates {
		ref := candidateRef{claim: c.NodeClaimName(), node: c.Name(), providerID: c.ProviderID(), pool: c.NodePool.Name}
		if cmd.forced {
			ref.condition = q.repairCondition(c.NodeClaimName())
		}
		cmd.candidates = append(cmd.candidates, ref)
	}
	q.work.Lock()
	defer q.work.Unlock()
	if err := q.reserve(cmd); err != nil {
		return err
	}
	// A rollback that fails below leaves the command queued, rolling back:
	// the queue loop retries it.
	defer func() { cmd.starting = false }()
	logger := log.FromContext(ctx).WithValues("command", cmd.id, "reason", cmd.reason, "decision", cmd.decision)
	// 1. Keep new pods off the candidates and say why on their NodeClaims.
	for _, c := range cmd.candidates {
		if err := taint(ctx, q.kubeClient, c.node); err != nil {
			return errors.Join(err, q.rollback(ctx, cmd, "tainting failed: "+err.Error()))
		}
		if err := setDisruptionReason(ctx, q.kubeClient, c.claim, cmd.reason, cmd.explanation, now); err != nil {
			return errors.Join(err, q.rollback(ctx, cmd, "recording the disruption reason failed: "+err.Error()))
		}
	}
	// 2. Launch the replacements. A repair goes on with those launched,
	// or none.
	names, err := q.launch(ctx, dc, cmd)
	cmd.replacements = names
	switch {
	case err != nil && cmd.forced:
		cmd.forcedWhy = "launching replacements failed: " + err.Error()
		logger.Error(err, "Launching replacements of unhealthy nodes, repairing them anyway", "launched", names)
	case err != nil:
		return errors.Join(err, q.rollback(ctx, cmd, "launching replacements failed: "+err.Error()))
	}
	// Repairs are no voluntary disruption (Karpenter counts them in
	// karpenter_nodeclaims_disrupted_total only).
	if !cmd.forced {
		q.metrics.DisruptionDecisions.WithLabelValues(string(cmd.decision), metricReason(cmd.reason), dc.Method.ConsolidationType()).Inc()
		for _, c := range cmd.candidates {
			q.metrics.DisruptionDecisionsByNodePool.WithLabelValues(string(cmd.decision), metricReason(cmd.reason), c.pool).Inc()
		}
	}
	logger.V(0).Info("Disrupting nodes", "nodes", nodeNames(cmd), "replacements", cmd.replacements, "explanation", cmd.explanation)
	// 3. Hand it to the queue loop; without replacements, finish now.
	if len(cmd.replacements) == 0 {
		return q.finish(ctx, cmd)
	}
	for _, c := range cmd.candidates {
		q.publish(ctx, c, func(obj client.Object, name string) events.Event { return launchingEvent(obj, name, cmd) })
	}
	select {
	case q.trigger <- struct{}{}:
	default:
	}
	return nil
}

// launch creates the command's replacement NodeClaims in parallel and
// returns the names of those created.
func (q *Queue) launch(ctx context.Context, dc *disruption.Command, cmd *command) ([]string, error) {
	claims := make([]*v1.NodeClaim, len(dc.Replacements))
	errs := make([]error, len(dc.Replacements))
	replaces := make([]string, 0, len(cmd.candidates))
	for _, c := range cmd.candidates {
		replaces = append(replaces, c.claim)
	}
	workqueue.ParallelizeUntil(ctx, 10, len(dc.Replacements), func(i int) {
		r := dc.Replacements[i]
		nc := r.NodeClaim()
		nc.Annotations[ReplacesAnnotationKey] = strings.Join(replaces, ",")
		nc.Annotations[ReplacementCountAnnotationKey] = strconv.Itoa(len(dc.Replacements))
		if err := q.kubeClient.Create(ctx, nc); err != nil {
			errs[i] = fmt.Errorf("creating replacement nodeclaim for nodepool %s: %w", r.NodePool.Name, err)
			return
		}
		claims[i] = nc
		// In the model at once, as the provisioner does: a static pool's
		// controller counts the replacement instead of the claim it
		// replaces, and must not see the one go before the other comes.
		q.cluster.AddCreatedNodeClaim(nc)
		q.metrics.NodeClaimsCreated.WithLabelValues("disruption", r.NodePool.Name).Inc()
		q.cluster.NominateNodeForPod(nc.Name, q.nominate)
		log.FromContext(ctx).V(0).Info("Launched replacement NodeClaim", "NodeClaim", klog.KObj(nc), "NodePool", klog.KObj(r.NodePool),
			"instanceTypes", len(r.Claim.InstanceTypes), "cheapest", r.Claim.InstanceTypes[0].Name, "price", r.Claim.Price, "pods", len(r.Claim.Pods))
	})
	var names []string
	for _, nc := range claims {
		if nc != nil {
			names = append(names, nc.Name)
		}
	}
	if err := ctx.Err(); err != nil && len(names) < len(dc.Replacements) {
		// Cancelled part-way: the pieces never tried left no error.
		errs = append(errs, fmt.Errorf("launched %d of %d replacements: %w", len(names), len(dc.Replacements), err))
	}
	return names, errors.Join(errs...)
}

// Reconcile takes every command one step further.
func (q *Queue) Reconcile(ctx context.Context) error {
	q.work.Lock()
	defer q.work.Unlock()
	q.mu.Lock()
	cmds := slices.Collect(maps.Values(q.commands))
	q.mu.Unlock()
	slices.SortFunc(cmds, func(a, b *command) int { return strings.Compare(a.id, b.id) })
	var errs []error
	for _, cmd := range cmds {
		if cmd.starting {
			continue
		}
		if err := q.step(ctx, cmd); err != nil {
			errs = append(errs, fmt.Errorf("command %s: %w", cmd.id, err))
		}
	}
	return errors.Join(errs...)
}

// step checks a command's replacements and pools and, when every
// replacement is initialized, deletes the candidates.
func (q *Queue) step(ctx context.Context, cmd *command) error {
	if cmd.rollingBack {
		return q.rollback(ctx, cmd, cmd.rollbackWhy)
	}
	now := q.clock.Now()
	// 1. Every replacement must still be there; count the initialized ones.
	initialized := 0
	for _, name := range cmd.replacements {
		nc := &v1.NodeClaim{}
		err := q.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nc)
		switch {
		case apierrors.IsNotFound(err):
			if cmd.seen[name] || now.Sub(cmd.started) > unseenReplacement {
				return q.giveUp(ctx, cmd, fmt.Sprintf("replacement NodeClaim %s was deleted", name))
			}
			continue
		case err != nil:
			return fmt.Errorf("reading replacement nodeclaim %s: %w", name, err)
		}
		cmd.seen[name] = true
		if nc.Status.NodeName != "" {
			cmd.nodeNames[name] = nc.Status.NodeName
		}
		if !nc.DeletionTimestamp.IsZero() {
			return q.giveUp(ctx, cmd, fmt.Sprintf("replacement NodeClaim %s is being deleted", name))
		}
		if meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeInitialized) {
			initialized++
		}
	}
	// 2. A NodePool that goes away takes its nodes with it; stop here so
	// that no candidate is left half-drained by us. A repair goes on.
	for _, c := range cmd.candidates {
		if cmd.forced {
			break
		}
		np := &v1.NodePool{}
		if err := q.kubeClient.Get(ctx, client.ObjectKey{Name: c.pool}, np); apierrors.IsNotFound(err) || (err == nil && !np.DeletionTimestamp.IsZero()) {
			return q.rollback(ctx, cmd, fmt.Sprintf("NodePool %s is being deleted", c.pool))
		} else if err != nil {
			return fmt.Errorf("reading nodepool %s: %w", c.pool, err)
		}
	}
	// 3. Once the model holds the replacements, let provisioning treat the
	// candidates' pods as moving (it counts them against the replacements).
	if !cmd.marked && q.inState(cmd.replacements) {
		q.mark(cmd)
	}
	// 4. Give up after the timeout.
	if now.Sub(cmd.started) > q.timeout {
		return q.giveUp(ctx, cmd, fmt.Sprintf("replacements were not initialized within %s", q.timeout))
	}
	// 5. Carry on once every replacement is initialized.
	if initialized == len(cmd.replacements) && cmd.marked {
		return q.finish(ctx, cmd)
	}
	for _, c := range cmd.candidates {
		q.publish(ctx, c, func(obj client.Object, name string) events.Event { return waitingEvent(obj, name, cmd) })
	}
	return nil
}

// inState reports whether the model knows every named NodeClaim.
func (q *Queue) inState(names []string) bool {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, n := range q.cluster.Nodes() {
		if n.NodeClaim != nil {
			delete(want, n.NodeClaim.Name)
		}
	}
	return len(want) == 0
}

func (q *Queue) mark(cmd *command) {
	ids := make([]string, 0, len(cmd.candidates))
	for _, c := range cmd.candidates {
		ids = append(ids, firstNonEmpty(c.providerID, c.claim))
	}
	q.cluster.MarkForDeletion(ids...)
	cmd.marked = true
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// giveUp ends a command whose replacements failed: a forced one deletes its
// candidates anyway (its replacements stay, for the pods to go to), any
// other is rolled back.
func (q *Queue) giveUp(ctx context.Context, cmd *command, why string) error {
	if !cmd.forced {
		return q.rollback(ctx, cmd, why)
	}
	if cmd.forcedWhy == "" {
		cmd.forcedWhy = why
		log.FromContext(ctx).V(0).Info("Repairing unhealthy nodes without waiting for their replacements", "command", cmd.id,
			"nodes", nodeNames(cmd), "replacements", cmd.replacements, "why", why)
	}
	return q.finish(ctx, cmd)
}

// repairCondition is the metric label of the condition the NodeClaim is
// repaired for, as the node.health controller requested it; "unknown" when
// the request is gone (a command resumed after a restart, for a node that
// recovered meanwhile).
func (q *Queue) repairCondition(claim string) string {
	if q.repairs != nil {
		if req, ok := q.repairs.Get(claim); ok {
			return req.ConditionLabel()
		}
	}
	return "unknown"
}

// finish deletes the candidates; termination drains them. The candidates
// of a repair get a termination deadline of now first, so that their
// drain does not wait on evictions a dead kubelet cannot carry out.
func (q *Queue) finish(ctx context.Context, cmd *command) error {
	if !cmd.marked {
		q.mark(cmd)
	}
	var errs []error
	for _, c := range cmd.candidates {
		nc := &v1.NodeClaim{}
		if err := q.kubeClient.Get(ctx, client.ObjectKey{Name: c.claim}, nc); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		if !nc.DeletionTimestamp.IsZero() || cmd.deleted[c.claim] {
			continue // a retry after a partial failure counts each node once
		}
		if cmd.forced {
			if err := health.AnnotateTerminationTime(ctx, q.kubeClient, nc, q.clock.Now()); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := q.kubeClient.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
			errs = append(errs, client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s: %w", c.claim, err)))
			continue
		}
		cmd.deleted[c.claim] = true
		q.metrics.NodeClaimsDisrupted.WithLabelValues(metricReason(cmd.reason), c.pool).Inc()
		if cmd.forced {
			condition := c.condition
			if condition == "" || condition == "unknown" {
				condition = q.repairCondition(c.claim)
			}
			q.metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues(condition, c.pool, nc.Labels[v1.CapacityTypeLabelKey], nc.Status.ImageID).Inc()
		}
		q.publish(ctx, c, func(obj client.Object, name string) events.Event { return terminatingEvent(obj, name, cmd) })
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The replacements stay nominated a while longer: the candidates' pods
	// are on their way to them.
	for _, r := range cmd.replacements {
		q.cluster.NominateNodeForPod(firstNonEmpty(cmd.nodeNames[r], r), q.nominate)
	}
	q.remember(cmd)
	q.remove(cmd)
	log.FromContext(ctx).V(0).Info("Deleted disrupted NodeClaims", "command", cmd.id, "nodes", nodeNames(cmd), "reason", cmd.reason)
	return nil
}

// rollback undoes a command: untaint and clear the candidates that are not
// being deleted, delete the replacements, and unmark the candidates. It is
// retried until every step succeeded.
func (q *Queue) rollback(ctx context.Context, cmd *command, why string) error {
	first := !cmd.rollingBack
	cmd.rollingBack, cmd.rollbackWhy = true, why
	var errs []error
	for _, c := range cmd.candidates {
		errs = append(errs, untaint(ctx, q.kubeClient, c.node), clearDisruptionReason(ctx, q.kubeClient, c.claim))
	}
	for _, name := range cmd.replacements {
		nc := &v1.NodeClaim{}
		nc.Name = name
		if err := q.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting replacement nodeclaim %s: %w", name, err))
		}
	}
	ids := make([]string, 0, len(cmd.candidates))
	for _, c := range cmd.candidates {
		ids = append(ids, firstNonEmpty(c.providerID, c.claim))
	}
	q.cluster.UnmarkForDeletion(ids...)
	cmd.marked = false
	if first {
		q.metrics.DisruptionQueueFailures.WithLabelValues(string(cmd.decision), metricReason(cmd.reason), cmd.method.ConsolidationType()).Inc()
		for _, c := range cmd.candidates {
			q.publish(ctx, c, func(obj client.Object, name string) events.Event { return rolledBackEvent(obj, name, cmd, why) })
		}
		log.FromContext(ctx).V(0).Info("Rolled back disruption", "command", cmd.id, "nodes", nodeNames(cmd), "why", why)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rolling back: %w", err)
	}
	q.remove(cmd)
	return nil
}

// publish sends the event about the candidate's Node and NodeClaim.
func (q *Queue) publish(ctx context.Context, c candidateRef, event func(obj client.Object, name string) events.Event) {
	nc := &v1.NodeClaim{}
	if err := q.kubeClient.Get(ctx, client.ObjectKey{Name: c.claim}, nc); err == nil {
		q.recorder.Publish(event(nc, c.claim))
	}
	node := &corev1.Node{}
	if err := q.kubeClient.Get(ctx, client.ObjectKey{Name: c.node}, node); err == nil {
		q.recorder.Publish(event(node, c.node))
	}
}

func nodeNames(cmd *command) []string {
	out := make([]string, 0, len(cmd.candidates))
	for _, c := range cmd.candidates {
		out = append(out, c.node)
	}
	return out
}

// metricReason is the reason label value: the reason in lower case, as
// Karpenter writes it.
func metricReason(r v1.DisruptionReason) string { return strings.ToLower(string(r)) }
