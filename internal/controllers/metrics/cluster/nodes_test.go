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

// gauge gathers reg and returns the series of the named metric, keyed by
// their node_name and resource_type labels ("a/cpu").
func gauge(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, pair := range metric.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			out[labels["node_name"]+"/"+labels["resource_type"]] = metric.GetGauge().GetValue()
		}
	}
	return out
}

// TestNodeMetrics writes two passes: the gauges Karpenter's capacity
// dashboard reads are set with its label names, DaemonSet pods are counted
// apart, unmanaged nodes are in nodepool N/A, and a node that went away
// leaves no series behind.
func TestNodeMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	managed := &machine.Machine{Node: node("a", "default"), NodeClaim: &v1.NodeClaim{}, Pods: []*corev1.Pod{podWith("500m", false), podWith("250m", false), podWith("100m", true)}}
	unmanaged := &machine.Machine{Node: node("b", "")}
	inFlight := &machine.Machine{NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}}
	m.Nodes.Set(nodeSamples([]*machine.Machine{managed, unmanaged, inFlight}))

	for name, want := range map[string]float64{
		"karpenter_nodes_allocatable":           1.93,
		"karpenter_nodes_total_pod_requests":    0.75,
		"karpenter_nodes_total_pod_limits":      0.75,
		"karpenter_nodes_total_daemon_requests": 0.1,
		"karpenter_nodes_total_daemon_limits":   0.1,
		"karpenter_nodes_system_overhead":       0.07,
	} {
		if got, ok := gauge(t, reg, name)["a/cpu"]; !ok || got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s of a's cpu = %v (present %v), want %v", name, got, ok, want)
		}
	}
	const allocatable = `
# HELP karpenter_nodes_allocatable Node allocatable, by resource type.
# TYPE karpenter_nodes_allocatable gauge
karpenter_nodes_allocatable{arch="arm64",capacity_type="spot",instance_type="c6g.large",node_name="a",nodepool="default",os="linux",resource_type="cpu",zone="us-east-1a"} 1.93
karpenter_nodes_allocatable{arch="arm64",capacity_type="spot",instance_type="c6g.large",node_name="a",nodepool="default",os="linux",resource_type="memory",zone="us-east-1a"} 3.221225472e+09
karpenter_nodes_allocatable{arch="arm64",capacity_type="spot",instance_type="c6g.large",node_name="b",nodepool="N/A",os="linux",resource_type="cpu",zone="us-east-1a"} 1.93
karpenter_nodes_allocatable{arch="arm64",capacity_type="spot",instance_type="c6g.large",node_name="b",nodepool="N/A",os="linux",resource_type="memory",zone="us-east-1a"} 3.221225472e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(allocatable), "karpenter_nodes_allocatable"); err != nil {
		t.Errorf("allocatable series (cpu and memory of a and b; none for the in-flight claim): %v", err)
	}
	if got := gauge(t, reg, "karpenter_nodes_total_pod_requests"); len(got) != 1 {
		t.Errorf("pod requests series %v, want a's cpu only (b has no pods)", got)
	}

	// b goes away; a's pods leave.
	managed.Pods = nil
	m.Nodes.Set(nodeSamples([]*machine.Machine{managed}))
	if got := gauge(t, reg, "karpenter_nodes_allocatable"); len(got) != 2 {
		t.Errorf("allocatable series after b left: %v, want a's cpu and memory", got)
	}
	if got := gauge(t, reg, "karpenter_nodes_total_pod_requests"); len(got) != 0 {
		t.Errorf("pod requests of a node without pods: %v, want none", got)
	}
}

// TestResourcesSharingALabelAreOneSeries: two extended resources whose
// names differ only in '-' and '.' map to one resource_type; their values
// are summed into one series, so a scrape never carries a series twice
// (the registry would reject the whole metric).
func TestResourcesSharingALabelAreOneSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	n := node("a", "default")
	n.Status.Allocatable["example.com/gpu-a"] = resource.MustParse("2")
	n.Status.Allocatable["example.com/gpu.a"] = resource.MustParse("3")
	m.Nodes.Set(nodeSamples([]*machine.Machine{{Node: n, NodeClaim: &v1.NodeClaim{}}}))
	if got := gauge(t, reg, "karpenter_nodes_allocatable")["a/example_com_gpu_a"]; got != 5 {
		t.Errorf("allocatable example_com_gpu_a = %v, want 5 (2 + 3)", got)
	}
}
