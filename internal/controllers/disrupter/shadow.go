package disrupter

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// reconcileShadow takes a disruption decision on in and publishes it
// instead of carrying it out. all is shadow mode (--dry-run): the pass's
// events and metrics are published as a live pass's are; otherwise in is
// the view of the shadow NodePools only (see splitShadow). It returns how
// long to wait before the next pass.
func (c *Controller) reconcileShadow(ctx context.Context, in disruption.Input, all bool) time.Duration {
	fingerprint := fingerprintOf(in)
	in.SkipConsolidation = fingerprint == c.shadowMemo && in.Now.Sub(c.shadowMemoAt) < memoRefresh
	opts := c.decisionOptions()
	opts.Interrupted = func() bool { return ctx.Err() != nil }
	out := disruption.Decide(in, opts)
	if ctx.Err() != nil {
		return 0
	}
	if all {
		c.publish(ctx, out)
	}
	c.shadow.publish(ctx, out.Command)
	if out.Command == nil {
		if !in.SkipConsolidation {
			c.shadowMemo, c.shadowMemoAt = fingerprint, in.Now
		}
	} else {
		c.shadowMemo = 0
	}
	return c.opts.PollPeriod
}

// splitShadow splits a view into the live one and the shadow NodePools'
// one, when some NodePool is annotated shadow-only. Nodes of the other
// side stay in each view as capacity pods may move to, but are no
// candidates (they are marked as replacements, which the decision leaves
// alone); the live view also sees the shadow pools as not Ready, so that
// no replacement is launched from them.
func splitShadow(in disruption.Input) (live, shadowed disruption.Input, ok bool) {
	pools := map[string]bool{}
	for _, np := range in.NodePools {
		if shadow.IsShadow(np.NodePool) {
			pools[np.NodePool.Name] = true
		}
	}
	if len(pools) == 0 {
		return in, in, false
	}
	live, shadowed = in, in
	live.Replacements, shadowed.Replacements = cloneSet(in.Replacements), cloneSet(in.Replacements)
	for _, n := range in.Nodes {
		if n.NodeClaim == nil {
			continue
		}
		if pools[n.NodePoolName()] {
			live.Replacements[n.NodeClaim.Name] = true
		} else {
			shadowed.Replacements[n.NodeClaim.Name] = true
		}
	}
	live.NodePools = slices.Clone(in.NodePools)
	for i, np := range live.NodePools {
		if pools[np.NodePool.Name] {
			notReady := np.NodePool.DeepCopy()
			meta.SetStatusCondition(&notReady.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeReady, Status: metav1.ConditionFalse,
				Reason: "Shadow", Message: "NodePool is annotated " + shadow.AnnotationKey})
			live.NodePools[i] = simulator.NodePool{NodePool: notReady, InstanceTypes: np.InstanceTypes}
		}
	}
	return live, shadowed, true
}

func cloneSet(s map[string]bool) map[string]bool {
	if s == nil {
		return map[string]bool{}
	}
	return maps.Clone(s)
}

// shadowPublisher publishes shadow disruption decisions: a ShadowDisrupt
// event on each candidate's Node and NodeClaim, a log line, and the
// dovetail_shadow_* disruption metrics, which describe the latest decision.
type shadowPublisher struct {
	recorder events.Recorder
	metrics  *metrics.Metrics
	nodes    *metrics.GaugeSeries
	savings  *metrics.GaugeSeries
}

func newShadowPublisher(recorder events.Recorder, m *metrics.Metrics) *shadowPublisher {
	if m == nil {
		// Composed without metrics (tests that only list controllers).
		m, _ = metrics.New(nil)
	}
	return &shadowPublisher{recorder: recorder, metrics: m,
		nodes: metrics.NewGaugeSeries(m.Shadow.DisruptedNodes), savings: metrics.NewGaugeSeries(m.Shadow.DisruptionSavingsPerHour)}
}

// publish publishes a command; nil (nothing to disrupt) clears the metrics.
func (s *shadowPublisher) publish(ctx context.Context, cmd *disruption.Command) {
	var nodes, savings metrics.Series
	if cmd != nil {
		s.metrics.Shadow.Decisions.WithLabelValues("disruption").Inc()
		reason, decision := metricReason(cmd.Reason), string(cmd.Decision())
		names := make([]string, 0, len(cmd.Candidates))
		for _, cand := range cmd.Candidates {
			names = append(names, cand.Name())
			nodes.Add(1, cand.NodePool.Name, reason, decision)
			if cand.Node != nil {
				s.recorder.Publish(shadowDisruptEvent(cand.Node, cmd))
			}
			if cand.NodeClaim != nil {
				s.recorder.Publish(shadowDisruptEvent(cand.NodeClaim, cmd))
			}
		}
		savings.Add(cmd.Savings(), reason)
		log.FromContext(ctx).Info("Would disrupt (shadow)", "decision", cmd.String(), "method", string(cmd.Method), "reason", string(cmd.Reason),
			"nodes", names, "replacements", len(cmd.Replacements), "savings", cmd.Savings())
	}
	s.nodes.Set(nodes)
	s.savings.Set(savings)
}

// shadowDisruptEvent tells a Node or NodeClaim that it would be disrupted.
func shadowDisruptEvent(obj client.Object, cmd *disruption.Command) events.Event {
	return events.Event{
		InvolvedObject: obj,
		Type:           corev1.EventTypeNormal,
		Reason:         shadow.ReasonDisrupt,
		Message:        "Would disrupt: " + cmd.String(),
		DedupeValues:   []string{obj.GetName(), cmd.String()},
	}
}
