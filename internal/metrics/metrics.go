// Package metrics defines Dovetail's Prometheus metrics. Names and labels
// follow Karpenter's (namespace "karpenter") wherever the meaning is the
// same, so that existing dashboards and alerts keep working. The metrics are
// built by New and injected into controllers; nothing registers itself.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric name Karpenter also exports.
const Namespace = "karpenter"

// DovetailNamespace prefixes the metrics of what only Dovetail does.
const DovetailNamespace = "dovetail"

// Label names shared by several metrics.
const (
	LabelNodePool          = "nodepool"
	LabelReason            = "reason"
	LabelController        = "controller"
	LabelMethod            = "method"
	LabelProvider          = "provider"
	LabelError             = "error"
	LabelResourceType      = "resource_type"
	LabelDecision          = "decision"
	LabelConsolidationType = "consolidation_type"
	LabelCapacityType      = "capacity_type"
	LabelInstanceType      = "instance_type"
	LabelZone              = "zone"
	LabelCode              = "code"
	// LabelCondition is the node condition type (in snake case) that
	// triggered a repair; LabelImageID the repaired node's image.
	LabelCondition = "condition"
	LabelImageID   = "image_id"
)

// Metrics holds every metric a Dovetail process exports.
type Metrics struct {
	// Provisioning.
	SchedulingDuration     *prometheus.HistogramVec
	SchedulerQueueDepth    *prometheus.GaugeVec
	UnschedulablePodsCount *prometheus.GaugeVec
	PodsState              *PodStates
	PodStartupDuration     prometheus.Histogram
	NodeClaimsCreated      *prometheus.CounterVec
	NodeClaimsLaunched     *prometheus.CounterVec
	NodeClaimsRegistered   *prometheus.CounterVec
	NodeClaimsInitialized  *prometheus.CounterVec
	NodeClaimsTerminated   *prometheus.CounterVec
	NodeClaimsDisrupted    *prometheus.CounterVec
	// NodeClaimsUnhealthyDisrupted breaks node repairs down by condition
	// and image, which NodeClaimsDisrupted does not.
	NodeClaimsUnhealthyDisrupted *prometheus.CounterVec
	NodesCreated                 *prometheus.CounterVec
	NodesTerminated              *prometheus.CounterVec
	NodesDrained                 *prometheus.CounterVec
	NodeTerminationDuration      *prometheus.HistogramVec
	PodsDrained                  *prometheus.CounterVec
	PodEvictionRequests          *prometheus.CounterVec
	NodePoolUsage                *prometheus.GaugeVec
	NodePoolLimit                *prometheus.GaugeVec
	CloudProviderDuration        *prometheus.HistogramVec
	CloudProviderErrors          *prometheus.CounterVec
	ClusterStateNodeCount        prometheus.Gauge
	ClusterStateSynced           prometheus.Gauge
	// Nodes are the per-node gauges, by resource_type, that Karpenter's
	// capacity dashboard queries (karpenter_nodes_allocatable, ...).
	Nodes *NodeResources
	// Dovetail's own: the runaway breaker (internal/runaway).
	LaunchBackoffs    *prometheus.CounterVec
	LaunchBlockedPods *prometheus.GaugeVec

	// Disruption.
	DisruptionDecisions           *prometheus.CounterVec
	DisruptionDecisionsByNodePool *prometheus.CounterVec
	DisruptionEligibleNodes       *prometheus.GaugeVec
	DisruptionAllowed             *prometheus.GaugeVec
	DisruptionFailedValidations   *prometheus.CounterVec
	DisruptionEvaluationDuration  *prometheus.HistogramVec
	DisruptionQueueFailures       *prometheus.CounterVec
	ConsolidationTimeouts         *prometheus.CounterVec
	// Consolidation are the karpenter_consolidation_* metrics of the
	// Balanced policy.
	Consolidation *Consolidation

	// Shadow are the dovetail_shadow_* metrics of shadow mode.
	Shadow *Shadow
}

// durationBuckets span 5 ms to about 10 minutes.
var durationBuckets = prometheus.ExponentialBuckets(0.005, 2, 18)

// New builds the metrics and registers them with reg (which may be nil, for
// tests that only read the values).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		SchedulingDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "scheduler", Name: "scheduling_duration_seconds",
			Help: "Duration of scheduling simulations used for provisioning and disruption.", Buckets: durationBuckets}, []string{LabelController}),
		SchedulerQueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "scheduler", Name: "queue_depth",
			Help: "Number of pods the last scheduling simulation had to place."}, []string{LabelController}),
		UnschedulablePodsCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "scheduler", Name: "unschedulable_pods_count",
			Help: "Number of pods the last scheduling simulation could not place on any NodePool."}, []string{LabelController}),
		PodsState: NewPodStates(),
		PodStartupDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "pods", Name: "startup_duration_seconds",
			Help: "Time from pod creation until the pod is running.", Buckets: durationBuckets}),
		NodeClaimsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "created_total",
			Help: "NodeClaims created, by reason (provisioning, disruption, static) and NodePool."}, []string{LabelReason, LabelNodePool}),
		NodeClaimsLaunched: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "launched_total",
			Help: "NodeClaims whose instance was launched."}, []string{LabelNodePool}),
		NodeClaimsRegistered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "registered_total",
			Help: "NodeClaims whose node registered."}, []string{LabelNodePool}),
		NodeClaimsInitialized: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "initialized_total",
			Help: "NodeClaims whose node became ready for pods."}, []string{LabelNodePool}),
		NodeClaimsTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "terminated_total",
			Help: "NodeClaims whose instance was terminated."}, []string{LabelNodePool}),
		NodeClaimsDisrupted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "disrupted_total",
			Help: "NodeClaims deleted by Dovetail, by reason."}, []string{LabelReason, LabelNodePool}),
		NodeClaimsUnhealthyDisrupted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodeclaims", Name: "unhealthy_disrupted_total",
			Help: "Unhealthy NodeClaims deleted by node repair, by the node condition that triggered it, NodePool, capacity type and image ID."},
			[]string{LabelCondition, LabelNodePool, LabelCapacityType, LabelImageID}),
		NodesCreated: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodes", Name: "created_total",
			Help: "Nodes that registered for a NodeClaim."}, []string{LabelNodePool}),
		NodesTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodes", Name: "terminated_total",
			Help: "Nodes deleted after draining."}, []string{LabelNodePool}),
		NodesDrained: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nodes", Name: "drained_total",
			Help: "Nodes drained before termination."}, []string{LabelNodePool}),
		NodeTerminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "nodes", Name: "termination_duration_seconds",
			Help: "Time from a node's deletion request until it is gone.", Buckets: durationBuckets}, []string{LabelNodePool}),
		PodsDrained: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "pods", Name: "drained_total",
			Help: "Pods evicted or deleted while draining a node."}, []string{LabelReason}),
		PodEvictionRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "pods", Name: "eviction_requests_total",
			Help: "Eviction API requests, by response code."}, []string{LabelCode}),
		NodePoolUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "nodepools", Name: "usage",
			Help: "Resources provisioned by a NodePool (capacity of its nodes and in-flight NodeClaims)."}, []string{LabelNodePool, LabelResourceType}),
		NodePoolLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "nodepools", Name: "limit",
			Help: "The limits of a NodePool."}, []string{LabelNodePool, LabelResourceType}),
		CloudProviderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "cloudprovider", Name: "duration_seconds",
			Help: "Duration of cloud-provider calls.", Buckets: durationBuckets}, []string{LabelController, LabelMethod, LabelProvider}),
		CloudProviderErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "cloudprovider", Name: "errors_total",
			Help: "Failed cloud-provider calls, by error kind."}, []string{LabelController, LabelMethod, LabelProvider, LabelError}),
		ClusterStateNodeCount: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "cluster_state", Name: "node_count",
			Help: "Nodes and in-flight NodeClaims in the cluster-state model."}),
		ClusterStateSynced: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "cluster_state", Name: "synced",
			Help: "1 when the cluster-state model matches the API server, else 0."}),

		DisruptionDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "decisions_total",
			Help: "Disruption decisions (delete or replace), by reason."}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		DisruptionDecisionsByNodePool: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "decisions_by_nodepool_total",
			Help: "Disruption decisions, by NodePool."}, []string{LabelDecision, LabelReason, LabelNodePool}),
		DisruptionEligibleNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "eligible_nodes",
			Help: "Nodes eligible for disruption, by reason."}, []string{LabelReason}),
		DisruptionAllowed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "nodepools", Name: "allowed_disruptions",
			Help: "Nodes a NodePool's budgets allow to be disrupted now, by reason."}, []string{LabelNodePool, LabelReason}),
		DisruptionFailedValidations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "failed_validations_total",
			Help: "Disruption decisions dropped because the cluster changed during the validation delay."}, []string{LabelConsolidationType}),
		DisruptionEvaluationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
			Help: "Time to evaluate a disruption method.", Buckets: durationBuckets}, []string{LabelMethod, LabelConsolidationType}),
		DisruptionQueueFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "queue_failures_total",
			Help: "Disruption commands rolled back (replacement timeout or failure)."}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		Nodes: NewNodeResources(),
		LaunchBackoffs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: DovetailNamespace, Subsystem: "provisioner", Name: "launch_backoffs_total",
			Help: "Launches found unused (a node launched for a pod registered and the pod still waited), each starting or lengthening a backoff for the pod's shape in the NodePool."}, []string{LabelNodePool}),
		LaunchBlockedPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: DovetailNamespace, Subsystem: "provisioner", Name: "launch_blocked_pods",
			Help: "Pending pods the last provisioning pass launched no node for because their shape is backing off in the NodePool."}, []string{LabelNodePool}),
		ConsolidationTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "voluntary_disruption", Name: "consolidation_timeouts_total",
			Help: "Consolidation evaluations that hit their time limit."}, []string{LabelConsolidationType}),
		Consolidation: newConsolidation(),
		Shadow:        newShadow(),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{
		m.SchedulingDuration, m.SchedulerQueueDepth, m.UnschedulablePodsCount, m.PodsState, m.PodStartupDuration,
		m.NodeClaimsCreated, m.NodeClaimsLaunched, m.NodeClaimsRegistered, m.NodeClaimsInitialized, m.NodeClaimsTerminated, m.NodeClaimsDisrupted, m.NodeClaimsUnhealthyDisrupted,
		m.NodesCreated, m.NodesTerminated, m.NodesDrained, m.NodeTerminationDuration, m.PodsDrained, m.PodEvictionRequests,
		m.NodePoolUsage, m.NodePoolLimit, m.CloudProviderDuration, m.CloudProviderErrors, m.ClusterStateNodeCount, m.ClusterStateSynced,
		m.LaunchBackoffs, m.LaunchBlockedPods,
		m.Nodes,
		m.DisruptionDecisions, m.DisruptionDecisionsByNodePool, m.DisruptionEligibleNodes, m.DisruptionAllowed, m.DisruptionFailedValidations,
		m.DisruptionEvaluationDuration, m.DisruptionQueueFailures, m.ConsolidationTimeouts,
		m.Consolidation.Score, m.Consolidation.Moves,
	}, m.Shadow.collectors()...)
}
