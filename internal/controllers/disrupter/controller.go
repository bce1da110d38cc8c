package disrupter

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// Options tune disruption.
type Options struct {
	// ValidationDelay is how long a consolidation or emptiness command waits
	// before it is re-simulated and carried out (Karpenter's 15 s).
	ValidationDelay time.Duration
	// ReplacementTimeout rolls a command back when its replacements are not
	// initialized in time.
	ReplacementTimeout time.Duration
	// PollPeriod is how often the loop looks again when it found nothing.
	PollPeriod time.Duration
	// NominationWindow keeps replacements from being disrupted while the
	// candidates' pods move to them (provisioning's nomination window).
	NominationWindow time.Duration
	// SpotToSpotConsolidation is the feature gate of that name.
	SpotToSpotConsolidation bool
	// MultiNodeReplacements is the feature gate of that name: multi-node
	// consolidation may launch several cheaper nodes, fewer than it removes.
	MultiNodeReplacements bool
	// CandidateTaints is the feature gate ConsolidationCandidateTaint: the
	// nodes consolidation means to remove once its budgets allow carry the
	// consolidation-candidate taint (machine.ConsolidationCandidateTaintKey,
	// PreferNoSchedule), so that the kube-scheduler places new pods
	// elsewhere rather than on them.
	CandidateTaints bool
	// MultiNodeTimeout and SingleNodeTimeout bound consolidation's search.
	MultiNodeTimeout, SingleNodeTimeout time.Duration
	// Simulator tunes the scheduling simulations.
	Simulator simulator.Options
	// Repairs are the node.health controller's repair requests, which the
	// loop carries out first (replacement first, forced); nil when node
	// repair is off.
	Repairs *health.Requests
	// DryRun is shadow mode: every decision is published (events,
	// dovetail_shadow_* metrics, logs) and none is carried out; no command
	// is resumed and no leftover taint or condition is removed.
	DryRun bool
}

// DefaultOptions are Karpenter's timings.
func DefaultOptions() Options {
	return Options{
		CandidateTaints: true, ValidationDelay: 15 * time.Second, ReplacementTimeout: 10 * time.Minute, PollPeriod: 10 * time.Second,
		NominationWindow: 20 * time.Second, MultiNodeTimeout: time.Minute, SingleNodeTimeout: 3 * time.Minute,
	}
}

// memoRefresh forces consolidation to run even when nothing changed
// (do-not-disrupt durations and budget windows pass silently).
const memoRefresh = 5 * time.Minute

// Controller is the disruption loop; see the package documentation.
type Controller struct {
	clock         clock.WithTicker
	kubeClient    client.Client
	cluster       *state.Cluster
	cloudProvider cloudprovider.CloudProvider
	recorder      events.Recorder
	metrics       *metrics.Metrics
	queue         *Queue
	opts          Options

	recovered bool
	// pending is a command waiting for its validation delay.
	pending    *disruption.Command
	validateAt time.Time
	// memo is the fingerprint of the last view on which consolidation
	// found nothing, and when.
	memo   uint64
	memoAt time.Time
	// allowedSeries are the (NodePool, reason) series of the
	// allowed-disruptions gauge the last pass set.
	allowedSeries map[[2]string]bool
	// removable is the last set of Nodes consolidation reported it means to
	// remove (disruption.Outcome.Removable): the ones that carry the
	// consolidation-candidate taint. Nil until a set is reported (after a
	// restart, the taints are left as they are until then).
	removable map[string]bool
	// shadow publishes shadow decisions; shadowMemo and shadowMemoAt are
	// memo and memoAt for them.
	shadow       *shadowPublisher
	shadowMemo   uint64
	shadowMemoAt time.Time
}

// NewController returns the disruption loop and its queue (register both).
func NewController(clk clock.WithTicker, kubeClient client.Client, cluster *state.Cluster, cp cloudprovider.CloudProvider,
	recorder events.Recorder, m *metrics.Metrics, opts Options) (*Controller, *Queue) {
	q := NewQueue(clk, kubeClient, cluster, recorder, m, opts.ReplacementTimeout, opts.NominationWindow)
	q.repairs = opts.Repairs
	return &Controller{clock: clk, kubeClient: kubeClient, cluster: cluster, cloudProvider: cp, recorder: recorder, metrics: m,
		queue: q, opts: opts, shadow: newShadowPublisher(recorder, m)}, q
}

// Name identifies the controller.
func (c *Controller) Name() string { return "disruption" }

// Repairs is the set of repair requests the loop carries out; nil when node
// repair is off.
func (c *Controller) Repairs() *health.Requests { return c.opts.Repairs }

// Register adds the loop to the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(c)
}

// NeedLeaderElection makes the loop run on the leader only.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs passes until ctx ends. A new repair request starts a pass at
// once.
func (c *Controller) Start(ctx context.Context) error {
	// The operator's manager starts runnables with its logger in ctx.
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("disruption"))
	var repairs <-chan struct{} // nil: never ready
	if c.opts.Repairs != nil {
		repairs = c.opts.Repairs.Changed()
	}
	for {
		wait, err := c.Reconcile(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "Disrupting")
			wait = max(wait, time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-repairs:
		case <-c.clock.After(wait):
		}
	}
}

// Reconcile runs one pass and returns how long to wait before the next.
func (c *Controller) Reconcile(ctx context.Context) (time.Duration, error) {
	// 1. Take no decision while the model lags the API server.
	synced, err := c.cluster.Synced(ctx, c.kubeClient)
	if err != nil || !synced {
		return time.Second, err
	}
	// 2. Resume commands a previous process left, then roll back what no
	// command owns. Shadow mode writes nothing, so it does neither.
	if c.opts.DryRun {
		in, err := c.input(ctx)
		if err != nil {
			return time.Second, err
		}
		return c.reconcileShadow(ctx, in, true), nil
	}
	if !c.recovered {
		if err := c.queue.Recover(ctx); err != nil {
			return time.Second, err
		}
		c.recovered = true
	}
	if err := c.cleanup(ctx); err != nil {
		return time.Second, fmt.Errorf("removing leftover disruption: %w", err)
	}
	in, err := c.input(ctx)
	if err != nil {
		return time.Second, err
	}
	// Shadow NodePools are decided on apart and published; the live
	// decision (and the validation of a pending command) leaves them out.
	if live, shadowed, ok := splitShadow(in); ok {
		c.reconcileShadow(ctx, shadowed, false)
		in = live
	} else {
		c.shadow.publish(ctx, nil)
	}
	// 3. A command waiting for validation: re-check it once the delay is
	// over. A repair does not wait for it.
	if c.pending != nil {
		if started, err := c.repairFirst(ctx, in); started || err != nil {
			return 0, err
		}
		if wait := c.validateAt.Sub(in.Now); wait > 0 {
			return wait, nil
		}
		return 0, c.validateAndStart(ctx, in)
	}
	// 4. Decide, skipping consolidation while its inputs are unchanged.
	fingerprint := fingerprintOf(in)
	in.SkipConsolidation = fingerprint == c.memo && in.Now.Sub(c.memoAt) < memoRefresh
	opts := c.decisionOptions()
	opts.ReportRemovable = c.opts.CandidateTaints
	opts.Interrupted = func() bool { return ctx.Err() != nil }
	out := disruption.Decide(in, opts)
	if ctx.Err() != nil {
		return 0, nil // shutting down: act on no half-finished search
	}
	c.publish(ctx, out)
	// Every pass brings the taints in line with the last set consolidation
	// reported (nil, with the gate off: an earlier process's are removed),
	// so that a failed write is tried again without deciding again.
	if out.RemovableKnown {
		c.removable = toSet(out.Removable)
	}
	if c.removable != nil || !c.opts.CandidateTaints {
		c.markCandidates(ctx, in, c.removable)
	}
	if out.Command == nil {
		if !in.SkipConsolidation {
			c.memo, c.memoAt = fingerprint, in.Now
		}
		return c.opts.PollPeriod, nil
	}
	c.memo = 0
	// 5. Validate consolidation after the delay; carry drift and repair out
	// at once.
	if out.Command.Method.NeedsValidation() && c.opts.ValidationDelay > 0 {
		c.pending, c.validateAt = out.Command, in.Now.Add(c.opts.ValidationDelay)
		log.FromContext(ctx).V(1).Info("Validating disruption decision after the delay", "delay", c.opts.ValidationDelay.String(),
			"decision", out.Command.String())
		return c.opts.ValidationDelay, nil
	}
	return 0, c.start(ctx, out.Command)
}

// repairFirst starts a repair command, if one is due, while a consolidation
// command waits for its validation.
func (c *Controller) repairFirst(ctx context.Context, in disruption.Input) (bool, error) {
	if len(in.Repairs) == 0 {
		return false, nil
	}
	opts := c.decisionOptions()
	opts.Methods = []disruption.Method{disruption.MethodRepair}
	out := disruption.Decide(in, opts)
	if out.Command == nil {
		return false, nil
	}
	return true, c.start(ctx, out.Command)
}

func (c *Controller) decisionOptions() disruption.Options {
	return disruption.Options{
		SpotToSpotConsolidation: c.opts.SpotToSpotConsolidation, MultiNodeReplacements: c.opts.MultiNodeReplacements,
		Simulator: c.opts.Simulator, Clock: c.clock,
		MultiNodeTimeout: c.opts.MultiNodeTimeout, SingleNodeTimeout: c.opts.SingleNodeTimeout,
	}
}

// validateAndStart re-checks the pending command on the current view and
// starts it if it still holds.
func (c *Controller) validateAndStart(ctx context.Context, in disruption.Input) error {
	cmd := c.pending
	c.pending = nil
	validated, err := disruption.Validate(cmd, in, c.decisionOptions())
	if disruption.IsValidationError(err) {
		c.metrics.DisruptionFailedValidations.WithLabelValues(cmd.Method.ConsolidationType()).Inc()
		log.FromContext(ctx).V(0).Info("Dropped disruption decision", "decision", cmd.String(), "reason", err.Error())
		for _, cand := range cmd.Candidates {
			if cand.NodeClaim != nil {
				c.recorder.Publish(rejectedEvent(cand.NodeClaim, cand.NodeClaimName(), err))
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	return c.start(ctx, validated)
}

// start hands a command to the queue.
func (c *Controller) start(ctx context.Context, cmd *disruption.Command) error {
	if err := c.queue.StartCommand(ctx, cmd); err != nil {
		return fmt.Errorf("starting disruption (%s): %w", cmd.String(), err)
	}
	return nil
}

// publish emits the events and metrics of a decision.
func (c *Controller) publish(ctx context.Context, out disruption.Outcome) {
	for _, b := range out.Blocked {
		if b.NodeClaim != nil {
			c.recorder.Publish(blockedEvent(b.NodeClaim, b.NodeClaim.Name, b.Reason, b.Message))
		}
		if b.Node != nil {
			c.recorder.Publish(blockedEvent(b.Node, b.Node.Name, b.Reason, b.Message))
		}
	}
	for _, a := range out.InvalidAnnotations {
		c.recorder.Publish(invalidAnnotationEvent(a.Pod))
	}
	c.publishHeld(out)
	c.publishScores(ctx, out)
	// Set this pass's series in place, then delete those of the last pass it
	// did not report (a deleted NodePool's): a reset would let a scrape in
	// between see no series at all.
	series := make(map[[2]string]bool, len(out.Budgets))
	for _, b := range out.Budgets {
		// No active budget allows every node of the pool.
		key := [2]string{b.NodePool.Name, metricReason(b.Reason)}
		series[key] = true
		c.metrics.DisruptionAllowed.WithLabelValues(key[0], key[1]).Set(float64(min(b.Allowed, b.Nodes)))
		switch {
		case b.Err != nil:
			c.recorder.Publish(invalidBudgetEvent(b.NodePool, b.Reason, b.Err))
			log.FromContext(ctx).Error(b.Err, "Evaluating disruption budget, disrupting nothing", "NodePool", klog.KObj(b.NodePool), "reason", b.Reason)
		case b.Blocked || (b.Eligible > 0 && b.Allowed == 0):
			c.recorder.Publish(budgetBlockedEvent(b.NodePool, b.Reason))
		}
	}
	for key := range c.allowedSeries {
		if !series[key] {
			c.metrics.DisruptionAllowed.DeleteLabelValues(key[0], key[1])
		}
	}
	c.allowedSeries = series
	// Every reason is set each pass, so that a count falls back to 0.
	for _, reason := range []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized, v1.DisruptionReasonDrifted} {
		c.metrics.DisruptionEligibleNodes.WithLabelValues(metricReason(reason)).Set(float64(out.Eligible[reason]))
	}
	for method, d := range out.Durations {
		c.metrics.DisruptionEvaluationDuration.WithLabelValues(string(method), method.ConsolidationType()).Observe(d.Seconds())
	}
	for _, m := range out.TimedOut {
		c.metrics.ConsolidationTimeouts.WithLabelValues(m.ConsolidationType()).Inc()
	}
}
