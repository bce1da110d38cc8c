package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values and names of the shadow metrics.
const (
	// LabelTarget says where shadow-placed pods go: TargetNew or TargetExisting.
	LabelTarget = "target"
	// TargetNew is a NodeClaim the plan would launch.
	TargetNew = "new"
	// TargetExisting is a node (or in-flight NodeClaim) that exists.
	TargetExisting = "existing"
)

// Shadow holds the dovetail_shadow_* metrics: the decisions shadow mode
// (--dry-run, or a NodePool annotated dovetail.dev/shadow) published
// instead of carrying them out. The gauges describe the latest decision,
// so that they do not grow while the same decision is taken pass after
// pass; the counters count published decisions.
type Shadow struct {
	// NodeClaims the latest provisioning plan would launch, by NodePool
	// and the cheapest option's instance type and capacity type.
	NodeClaims *prometheus.GaugeVec
	// LaunchPricePerHour is the hourly price of those NodeClaims (their
	// cheapest options), by NodePool.
	LaunchPricePerHour *prometheus.GaugeVec
	// Pods the latest plan would place, by target: on new NodeClaims (by
	// their NodePool) or on existing nodes (NodePool "").
	Pods *prometheus.GaugeVec
	// UnschedulablePods the latest plan could place nowhere.
	UnschedulablePods prometheus.Gauge
	// DisruptedNodes the latest disruption decision would disrupt, by
	// NodePool, reason and decision (delete or replace).
	DisruptedNodes *prometheus.GaugeVec
	// DisruptionSavingsPerHour is the hourly price the latest disruption
	// decision would save, by reason.
	DisruptionSavingsPerHour *prometheus.GaugeVec
	// Decisions counts published decisions, by controller (provisioner,
	// disruption).
	Decisions *prometheus.CounterVec
}

func newShadow() *Shadow {
	const subsystem = "shadow"
	return &Shadow{
		NodeClaims: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "nodeclaims",
			Help: "NodeClaims the latest shadow provisioning plan would launch, by NodePool and the cheapest option's instance type and capacity type."},
			[]string{LabelNodePool, LabelInstanceType, LabelCapacityType}),
		LaunchPricePerHour: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "launch_price_per_hour",
			Help: "Hourly price (USD) of the NodeClaims the latest shadow provisioning plan would launch, by NodePool."}, []string{LabelNodePool}),
		Pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "pods",
			Help: "Pending pods the latest shadow provisioning plan would place, by target: new NodeClaims (by NodePool) or existing nodes (nodepool \"\")."}, []string{LabelNodePool, LabelTarget}),
		UnschedulablePods: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "unschedulable_pods",
			Help: "Pending pods the latest shadow provisioning plan could place nowhere."}),
		DisruptedNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "disrupted_nodes",
			Help: "Nodes the latest shadow disruption decision would disrupt, by NodePool, reason and decision."}, []string{LabelNodePool, LabelReason, LabelDecision}),
		DisruptionSavingsPerHour: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "disruption_savings_per_hour",
			Help: "Hourly price (USD) the latest shadow disruption decision would save, by reason."}, []string{LabelReason}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: DovetailNamespace, Subsystem: subsystem, Name: "decisions_total",
			Help: "Shadow decisions published instead of carried out, by controller."}, []string{LabelController}),
	}
}

func (s *Shadow) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.NodeClaims, s.LaunchPricePerHour, s.Pods, s.UnschedulablePods, s.DisruptedNodes, s.DisruptionSavingsPerHour, s.Decisions}
}

// GaugeSeries sets a gauge vector's series to exactly those of the last
// call: series the previous call set and this one does not are deleted.
// It never resets the vector, so a scrape in between sees no gap. Not safe
// for concurrent use; each is owned by one controller loop.
type GaugeSeries struct {
	vec  *prometheus.GaugeVec
	last map[string][]string
}

// NewGaugeSeries wraps a gauge vector.
func NewGaugeSeries(vec *prometheus.GaugeVec) *GaugeSeries {
	return &GaugeSeries{vec: vec, last: map[string][]string{}}
}

// Series accumulates the values of one call to GaugeSeries.Set: values of
// the same labels add up.
type Series struct {
	labels map[string][]string
	values map[string]float64
}

// Add adds v to the series of the label values.
func (s *Series) Add(v float64, labels ...string) {
	if s.labels == nil {
		s.labels, s.values = map[string][]string{}, map[string]float64{}
	}
	key := strings.Join(labels, "\x00")
	s.labels[key] = labels
	s.values[key] += v
}

// Set makes the vector hold exactly the series.
func (g *GaugeSeries) Set(s Series) {
	for key, labels := range s.labels {
		g.vec.WithLabelValues(labels...).Set(s.values[key])
	}
	for key, labels := range g.last {
		if _, ok := s.labels[key]; !ok {
			g.vec.DeleteLabelValues(labels...)
		}
	}
	g.last = map[string][]string{}
	for key, labels := range s.labels {
		g.last[key] = labels
	}
}
