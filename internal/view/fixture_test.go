package view

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

var now = time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)

func testPrices() Prices {
	return NewPrices([]*cloudprovider.InstanceType{
		{Name: "m5.large", Offerings: []cloudprovider.Offering{
			{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.096},
			{Zone: "us-east-1a", CapacityType: "spot", Price: 0.04},
		}},
		{Name: "m5.xlarge", Offerings: []cloudprovider.Offering{{Zone: "us-east-1b", CapacityType: "on-demand", Price: 0.192}}},
	})
}

func labels(pool, it, zone, ct string) map[string]string {
	l := map[string]string{corev1.LabelInstanceTypeStable: it, corev1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: ct}
	if pool != "" {
		l[v1.NodePoolLabelKey] = pool
	}
	return l
}

func node(name, pool, it, zone, ct, cpu, mem string, age time.Duration) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(pool, it, zone, ct), CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func claim(name, pool, nodeName, it, zone, ct string, age time.Duration, conds ...metav1.Condition) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(pool, it, zone, ct), CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Status: v1.NodeClaimStatus{NodeName: nodeName, Conditions: conds,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}},
	}
	if nodeName != "" {
		nc.Status.ProviderID = "kwok://" + nodeName
	}
	return nc
}

func cond(t string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t}
}

func pod(ns, name, nodeName, cpu, mem string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func pool(name string) *v1.NodePool { return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}} }

// fixture is a cluster of two NodePools: default with a busy on-demand
// node, a drifted spot node held by a do-not-disrupt pod, an in-flight
// claim; batch with a consolidatable node being disrupted; an unmanaged
// node of an unknown type; an empty NodePool spare.
func fixture() Objects {
	disrupted := node("n-batch", "batch", "m5.xlarge", "us-east-1b", "on-demand", "4", "16Gi", 3*24*time.Hour)
	disrupted.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint()}
	return Objects{
		NodePools: []*v1.NodePool{pool("default"), pool("batch"), pool("spare")},
		Nodes: []*corev1.Node{
			node("n-busy", "default", "m5.large", "us-east-1a", "on-demand", "2", "8Gi", 2*time.Hour),
			node("n-drift", "default", "m5.large", "us-east-1a", "spot", "2", "8Gi", 30*time.Minute),
			disrupted,
			node("n-other", "", "t9.odd", "us-east-1c", "", "1", "2Gi", 90*time.Second),
		},
		NodeClaims: []*v1.NodeClaim{
			claim("c-busy", "default", "n-busy", "m5.large", "us-east-1a", "on-demand", 2*time.Hour),
			claim("c-drift", "default", "n-drift", "m5.large", "us-east-1a", "spot", 30*time.Minute, cond(v1.ConditionTypeDrifted)),
			claim("c-batch", "batch", "n-batch", "m5.xlarge", "us-east-1b", "on-demand", 3*24*time.Hour,
				cond(v1.ConditionTypeConsolidatable), metav1.Condition{Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Underutilized"}),
			claim("c-new", "default", "", "m5.large", "us-east-1a", "spot", 20*time.Second, cond(v1.ConditionTypeLaunched)),
		},
		Pods: []*corev1.Pod{
			pod("shop", "web-1", "n-busy", "1500m", "6Gi", nil),
			pod("shop", "web-2", "n-busy", "500m", "1Gi", nil),
			pod("shop", "db", "n-drift", "1", "2Gi", map[string]string{v1.DoNotDisruptAnnotationKey: "true"}),
			pod("batch", "job", "n-batch", "1", "4Gi", nil),
			func() *corev1.Pod {
				p := pod("batch", "done", "n-batch", "3", "1Gi", nil)
				p.Status.Phase = corev1.PodSucceeded
				return p
			}(),
			pod("shop", "pending", "", "1", "1Gi", nil),
		},
	}
}

func ptrTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}
