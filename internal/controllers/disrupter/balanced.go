package disrupter

import (
	"context"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
)

// publishScores publishes the Balanced policy's verdicts of a pass: a
// ConsolidationApproved or ConsolidationRejected event carrying the score
// (on the node and its NodeClaim for a single-node move, on the NodePool
// for a multi-node one, as Karpenter does) and the
// karpenter_consolidation_* metrics.
func (c *Controller) publishScores(ctx context.Context, out disruption.Outcome) {
	for _, s := range out.Scores {
		policy := string(s.NodePool.Spec.Disruption.ConsolidationPolicy)
		c.metrics.Consolidation.Score.WithLabelValues(s.Decision(), s.NodePool.Name, policy).Observe(s.Score)
		c.metrics.Consolidation.Moves.WithLabelValues(s.Decision(), s.NodePool.Name, policy).Inc()
		log.FromContext(ctx).V(1).Info("Scored consolidation move", "NodePool", klog.KObj(s.NodePool), "decision", s.Decision(),
			"score", s.Score, "threshold", s.Threshold, "move", s.Command.String())
		if s.Method == disruption.MethodMultiNode || len(s.Candidates) != 1 {
			c.recorder.Publish(scoreEvent(s.NodePool, s.NodePool.Name, s))
			continue
		}
		cand := s.Candidates[0]
		if cand.NodeClaim != nil {
			c.recorder.Publish(scoreEvent(cand.NodeClaim, cand.NodeClaim.Name, s))
		}
		if cand.Node != nil {
			c.recorder.Publish(scoreEvent(cand.Node, cand.Node.Name, s))
		}
	}
}

// publishHeld publishes, on each node a budget held back and on its
// NodeClaim, an event naming the budget and when its window opens.
func (c *Controller) publishHeld(out disruption.Outcome) {
	for _, h := range out.Held {
		if h.NodeClaim != nil {
			c.recorder.Publish(heldEvent(h.NodeClaim, h.NodeClaim.Name, h))
		}
		if h.Node != nil {
			c.recorder.Publish(heldEvent(h.Node, h.Node.Name, h))
		}
	}
}
