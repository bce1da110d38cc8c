package cluster

import (
	"maps"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// series is one written sample's gauge and labels.
type series struct {
	vec    *prometheus.GaugeVec
	labels prometheus.Labels
}

// nodeSeries remembers, per node name, the series the last pass wrote, so
// that the next pass removes exactly those that no longer hold (a node gone,
// a label changed, a resource removed) without deleting and re-adding the
// others, which a scrape in between would see as a gap.
type nodeSeries map[string][]series

// write sets the per-node gauges from the model's nodes and returns what it
// wrote, removing the series of the previous pass that it did not write.
func (last nodeSeries) write(m *metrics.Metrics, nodes []*machine.Machine) nodeSeries {
	gauges := []struct {
		vec  *prometheus.GaugeVec
		list func(nodeUsage) corev1.ResourceList
	}{
		{m.NodesAllocatable, func(n nodeUsage) corev1.ResourceList { return n.allocatable }},
		{m.NodesTotalPodRequests, func(n nodeUsage) corev1.ResourceList { return n.podRequests }},
		{m.NodesTotalPodLimits, func(n nodeUsage) corev1.ResourceList { return n.podLimits }},
		{m.NodesTotalDaemonRequests, func(n nodeUsage) corev1.ResourceList { return n.daemonRequests }},
		{m.NodesTotalDaemonLimits, func(n nodeUsage) corev1.ResourceList { return n.daemonLimits }},
		{m.NodesSystemOverhead, func(n nodeUsage) corev1.ResourceList { return n.overhead }},
	}
	now := nodeSeries{}
	for _, n := range nodes {
		if n.Node == nil {
			continue // in flight: no node to describe yet
		}
		usage := usageOf(n)
		base := nodeLabels(n.Node)
		var written []series
		for _, g := range gauges {
			for name, q := range g.list(usage) {
				labels := maps.Clone(base)
				labels[metrics.LabelResourceType] = resourceTypeLabel(name)
				g.vec.With(labels).Set(q.AsApproximateFloat64())
				written = append(written, series{vec: g.vec, labels: labels})
			}
		}
		now[n.Node.Name] = written
	}
	for name, old := range last {
		for _, s := range old {
			if !contains(now[name], s) {
				s.vec.Delete(s.labels)
			}
		}
	}
	return now
}

func contains(list []series, s series) bool {
	for _, x := range list {
		if x.vec == s.vec && maps.Equal(x.labels, s.labels) {
			return true
		}
	}
	return false
}

// nodeUsage is what one node offers and what its pods ask for.
type nodeUsage struct {
	allocatable, overhead        corev1.ResourceList
	podRequests, podLimits       corev1.ResourceList
	daemonRequests, daemonLimits corev1.ResourceList
}

// usageOf sums the requests and limits of a node's pods, DaemonSet pods
// apart, as the kube-scheduler counts them.
func usageOf(n *machine.Machine) nodeUsage {
	u := nodeUsage{
		allocatable: n.Node.Status.Allocatable, overhead: corev1.ResourceList{},
		podRequests: corev1.ResourceList{}, podLimits: corev1.ResourceList{},
		daemonRequests: corev1.ResourceList{}, daemonLimits: corev1.ResourceList{},
	}
	for name, capacity := range n.Node.Status.Capacity {
		q := capacity.DeepCopy()
		if a, ok := n.Node.Status.Allocatable[name]; ok {
			q.Sub(a)
		}
		u.overhead[name] = q
	}
	for _, pod := range n.Pods {
		requests, limits := u.podRequests, u.podLimits
		if podutil.IsOwnedByDaemonSet(pod) {
			requests, limits = u.daemonRequests, u.daemonLimits
		}
		add(requests, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
		add(limits, resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{}))
	}
	return u
}

func add(into, list corev1.ResourceList) {
	for name, q := range list {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

// nodeLabels are the per-node metric labels without resource_type.
func nodeLabels(node *corev1.Node) prometheus.Labels {
	pool := node.Labels[v1.NodePoolLabelKey]
	if pool == "" {
		pool = "N/A"
	}
	return prometheus.Labels{
		"node_name":               node.Name,
		metrics.LabelNodePool:     pool,
		"arch":                    node.Labels[corev1.LabelArchStable],
		"os":                      node.Labels[corev1.LabelOSStable],
		metrics.LabelCapacityType: node.Labels[v1.CapacityTypeLabelKey],
		metrics.LabelInstanceType: node.Labels[corev1.LabelInstanceTypeStable],
		metrics.LabelZone:         node.Labels[corev1.LabelTopologyZone],
	}
}

// resourceTypeLabel names a resource as Karpenter's metrics do: cpu,
// memory, pods, ephemeral_storage, nvidia_com_gpu.
func resourceTypeLabel(name corev1.ResourceName) string {
	out := []byte(name)
	for i, c := range out {
		if c == '-' || c == '.' || c == '/' {
			out[i] = '_'
		}
	}
	return string(out)
}
