package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// NodeGauge names one of the per-node karpenter_nodes_* gauges.
type NodeGauge int

// The per-node gauges Karpenter's capacity dashboard reads.
const (
	NodeAllocatable NodeGauge = iota
	NodeTotalPodRequests
	NodeTotalPodLimits
	NodeTotalDaemonRequests
	NodeTotalDaemonLimits
	NodeSystemOverhead
	nodeGaugeCount
)

// nodeGaugeOpts are each gauge's name (in the "nodes" subsystem) and help,
// indexed by NodeGauge.
var nodeGaugeOpts = [nodeGaugeCount]struct{ name, help string }{
	NodeAllocatable:         {"allocatable", "Node allocatable, by resource type."},
	NodeTotalPodRequests:    {"total_pod_requests", "Requests of the node's non-DaemonSet pods, by resource type."},
	NodeTotalPodLimits:      {"total_pod_limits", "Limits of the node's non-DaemonSet pods, by resource type."},
	NodeTotalDaemonRequests: {"total_daemon_requests", "Requests of the node's DaemonSet pods, by resource type."},
	NodeTotalDaemonLimits:   {"total_daemon_limits", "Limits of the node's DaemonSet pods, by resource type."},
	NodeSystemOverhead:      {"system_overhead", "Node capacity minus allocatable (kubelet, system reservations and eviction threshold), by resource type."},
}

// Positions in NodeSample.Labels: NodeLabels without resource_type, which
// each value carries.
const (
	NodeLabelName = iota
	NodeLabelNodePool
	NodeLabelArch
	NodeLabelOS
	NodeLabelCapacityType
	NodeLabelInstanceType
	NodeLabelZone
	nodeLabelCount
)

// NodeLabels label the per-node metrics as Karpenter's do: the node, its
// NodePool ("N/A" for nodes Dovetail does not manage), the resource, and
// well-known node labels in snake case. The order is that of the label
// values a sample gives (the exposition sorts labels by name).
var NodeLabels = []string{"node_name", LabelNodePool, "arch", "os", LabelCapacityType, LabelInstanceType, LabelZone, LabelResourceType}

// NodeLabelValues are a node's label values, indexed by the NodeLabel*
// positions.
type NodeLabelValues [nodeLabelCount]string

// ResourceValue is one resource's value in a per-node gauge.
type ResourceValue struct {
	// Type is the resource_type label: the resource's name in snake case.
	Type string
	// Value is the gauge's value for that resource.
	Value float64
}

// NodeSample is one node's values of every per-node gauge.
type NodeSample struct {
	// Labels are the node's label values.
	Labels NodeLabelValues
	// Values are each gauge's values, indexed by NodeGauge; a resource
	// without a value has no series.
	Values [nodeGaugeCount][]ResourceValue
}

// NodeResources are the per-node karpenter_nodes_* gauges (allocatable,
// total pod and DaemonSet requests and limits, system overhead). Each pass
// replaces the whole set of samples at once, so a scrape sees one pass or
// the next, never a node half-written, and the series are built only when
// scraped: at 668 nodes the equivalent GaugeVec children and the label
// maps kept to delete them were about a tenth of the controller's live
// heap. Safe for concurrent use.
type NodeResources struct {
	descs [nodeGaugeCount]*prometheus.Desc

	mu      sync.RWMutex
	samples []NodeSample
}

// NewNodeResources returns the per-node gauges with no samples.
func NewNodeResources() *NodeResources {
	n := &NodeResources{}
	for g, opts := range nodeGaugeOpts {
		n.descs[g] = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "nodes", opts.name), opts.help, NodeLabels, nil)
	}
	return n
}

// Set replaces every sample with samples, which the caller must not change
// afterwards.
func (n *NodeResources) Set(samples []NodeSample) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.samples = samples
}

// Describe sends the gauges' descriptors.
func (n *NodeResources) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range n.descs {
		ch <- desc
	}
}

// Collect sends one series per node, gauge and resource of the last Set.
func (n *NodeResources) Collect(ch chan<- prometheus.Metric) {
	n.mu.RLock()
	samples := n.samples // never changed after Set, only replaced
	n.mu.RUnlock()
	var labels [nodeLabelCount + 1]string
	for i := range samples {
		copy(labels[:], samples[i].Labels[:])
		for g, values := range samples[i].Values {
			for _, v := range values {
				labels[nodeLabelCount] = v.Type
				metric, err := prometheus.NewConstMetric(n.descs[g], prometheus.GaugeValue, v.Value, labels[:]...)
				if err != nil {
					metric = prometheus.NewInvalidMetric(n.descs[g], err)
				}
				ch <- metric
			}
		}
	}
}
