package cluster

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// nodeSamples are the per-node gauges' values for the model's nodes (those
// with a Node; a claim in flight has nothing to describe yet).
func nodeSamples(nodes []*machine.Machine) []metrics.NodeSample {
	samples := make([]metrics.NodeSample, 0, len(nodes))
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		usage := usageOf(n)
		sample := metrics.NodeSample{Labels: nodeLabels(n.Node)}
		for gauge, list := range [...]corev1.ResourceList{
			metrics.NodeAllocatable:         usage.allocatable,
			metrics.NodeTotalPodRequests:    usage.podRequests,
			metrics.NodeTotalPodLimits:      usage.podLimits,
			metrics.NodeTotalDaemonRequests: usage.daemonRequests,
			metrics.NodeTotalDaemonLimits:   usage.daemonLimits,
			metrics.NodeSystemOverhead:      usage.overhead,
		} {
			sample.Values[gauge] = resourceValues(list)
		}
		samples = append(samples, sample)
	}
	return samples
}

// resourceValues are a resource list's values by resource_type label. Two
// resources whose names differ only in '-', '.' or '/' share a label; their
// values are summed into one series, since a scrape must not carry the
// same series twice.
func resourceValues(list corev1.ResourceList) []metrics.ResourceValue {
	values := make([]metrics.ResourceValue, 0, len(list))
	for name, q := range list {
		label := resourceTypeLabel(name)
		i := slices.IndexFunc(values, func(v metrics.ResourceValue) bool { return v.Type == label })
		if i < 0 {
			values = append(values, metrics.ResourceValue{Type: label})
			i = len(values) - 1
		}
		values[i].Value += q.AsApproximateFloat64()
	}
	return values
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
func nodeLabels(node *corev1.Node) metrics.NodeLabelValues {
	pool := node.Labels[v1.NodePoolLabelKey]
	if pool == "" {
		pool = "N/A"
	}
	var labels metrics.NodeLabelValues
	labels[metrics.NodeLabelName] = node.Name
	labels[metrics.NodeLabelNodePool] = pool
	labels[metrics.NodeLabelArch] = node.Labels[corev1.LabelArchStable]
	labels[metrics.NodeLabelOS] = node.Labels[corev1.LabelOSStable]
	labels[metrics.NodeLabelCapacityType] = node.Labels[v1.CapacityTypeLabelKey]
	labels[metrics.NodeLabelInstanceType] = node.Labels[corev1.LabelInstanceTypeStable]
	labels[metrics.NodeLabelZone] = node.Labels[corev1.LabelTopologyZone]
	return labels
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
