package cluster

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

func node(name, pool string) *corev1.Node {
	labels := map[string]string{corev1.LabelArchStable: "arm64", corev1.LabelOSStable: "linux", v1.CapacityTypeLabelKey: "spot",
		corev1.LabelInstanceTypeStable: "c6g.large", corev1.LabelTopologyZone: "us-east-1a"}
	if pool != "" {
		labels[v1.NodePoolLabelKey] = pool
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("3Gi")},
	}}
}

func podWith(cpu string, daemon bool) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
	}}}}}
	if daemon {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
	}
	return p
}

// TestNodeMetrics writes two passes: the gauges Karpenter's capacity
// dashboard reads are set with its label names, DaemonSet pods are counted
// apart, unmanaged nodes are in nodepool N/A, and a node that went away
// leaves no series behind.
func TestNodeMetrics(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	managed := &machine.Machine{Node: node("a", "default"), NodeClaim: &v1.NodeClaim{}, Pods: []*corev1.Pod{podWith("500m", false), podWith("250m", false), podWith("100m", true)}}
	unmanaged := &machine.Machine{Node: node("b", "")}
	inFlight := &machine.Machine{NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}}
	written := nodeSeries{}.write(m, []*machine.Machine{managed, unmanaged, inFlight})

	labels := prometheus.Labels{"node_name": "a", "nodepool": "default", "resource_type": "cpu", "arch": "arm64", "os": "linux",
		"capacity_type": "spot", "instance_type": "c6g.large", "zone": "us-east-1a"}
	for name, tc := range map[string]struct {
		vec  *prometheus.GaugeVec
		want float64
	}{
		"allocatable":     {m.NodesAllocatable, 1.93},
		"pod requests":    {m.NodesTotalPodRequests, 0.75},
		"pod limits":      {m.NodesTotalPodLimits, 0.75},
		"daemon requests": {m.NodesTotalDaemonRequests, 0.1},
		"daemon limits":   {m.NodesTotalDaemonLimits, 0.1},
		"system overhead": {m.NodesSystemOverhead, 0.07},
	} {
		if got := testutil.ToFloat64(tc.vec.With(labels)); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s = %v, want %v", name, got, tc.want)
		}
	}
	unmanagedLabels := prometheus.Labels{"node_name": "b", "nodepool": "N/A", "resource_type": "memory", "arch": "arm64", "os": "linux",
		"capacity_type": "spot", "instance_type": "c6g.large", "zone": "us-east-1a"}
	if got := testutil.ToFloat64(m.NodesAllocatable.With(unmanagedLabels)); got != 3*1024*1024*1024 {
		t.Errorf("unmanaged node's allocatable memory = %v, want 3Gi", got)
	}
	if n := testutil.CollectAndCount(m.NodesAllocatable); n != 4 {
		t.Errorf("%d allocatable series, want 4 (cpu and memory of a and b; none for the in-flight claim)", n)
	}

	// b goes away; a's pods leave.
	managed.Pods = nil
	nodeSeries(written).write(m, []*machine.Machine{managed})
	if n := testutil.CollectAndCount(m.NodesAllocatable); n != 2 {
		t.Errorf("%d allocatable series after b left, want 2", n)
	}
	if err := testutil.CollectAndCompare(m.NodesTotalPodRequests, strings.NewReader("")); err != nil {
		t.Errorf("pod requests of a node without pods: %v", err)
	}
}
