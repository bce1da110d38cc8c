package metrics

import "github.com/prometheus/client_golang/prometheus"

// LabelPolicy is the NodePool's consolidation policy a move was scored under.
const LabelPolicy = "policy"

// scoreBuckets are the score buckets of Karpenter's Balanced consolidation
// design: around the thresholds 1/3, 1/2 and 1 of k = 3, 2 and 1.
var scoreBuckets = []float64{0.1, 0.25, 0.33, 0.5, 1, 2, 5, 10}

// Consolidation holds the metrics of the Balanced consolidation policy,
// with Karpenter's names (karpenter_consolidation_*), labelled by decision
// (approved, rejected), NodePool and policy.
type Consolidation struct {
	// Score observes the score of every scored move.
	Score *prometheus.HistogramVec
	// Moves counts the scored moves.
	Moves *prometheus.CounterVec
}

func newConsolidation() *Consolidation {
	labels := []string{LabelDecision, LabelNodePool, LabelPolicy}
	return &Consolidation{
		Score: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "consolidation", Name: "score",
			Help:    "Score of Balanced consolidation moves (share of the NodePool's cost saved over share of its disruption cost), by decision, NodePool and policy.",
			Buckets: scoreBuckets}, labels),
		Moves: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "consolidation", Name: "moves_total",
			Help: "Balanced consolidation moves scored, by decision (approved or rejected), NodePool and policy."}, labels),
	}
}
