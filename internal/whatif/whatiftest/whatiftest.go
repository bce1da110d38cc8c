// Package whatiftest builds clusters for the tests and benchmarks of
// package whatif and of `dovetail explain`: Nodes with their NodeClaims as
// the lifecycle controllers leave them (launched, registered, initialized),
// NodePools, KWOKNodeClasses and pods, and large synthetic clusters.
package whatiftest

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// NodeClass returns a Ready KWOKNodeClass.
func NodeClass(name string, ready bool) *unstructured.Unstructured {
	status := "True"
	if !ready {
		status = "False"
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.kwok.sh/v1alpha1",
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": status, "reason": "Test", "message": "set by the test", "lastTransitionTime": "2025-01-01T00:00:00Z",
		}}},
	}}
	return u
}

// NodePool returns a Ready NodePool of on-demand c and m instances that
// consolidates WhenEmptyOrUnderutilized after consolidateAfter, with a
// 100% budget.
func NodePool(name, nodeClass string, weight int32, consolidateAfter string) *v1.NodePool {
	np := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-nodepool-" + name), Generation: 1},
	}
	if weight != 0 {
		np.Spec.Weight = new(weight)
	}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: nodeClass}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m"}},
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
	}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration(consolidateAfter),
		Budgets:             []v1.Budget{{Nodes: intstr.FromString("100%")}},
	}
	np.Status.Conditions = []metav1.Condition{
		{Type: v1.ConditionTypeNodeClassReady, Status: metav1.ConditionTrue, Reason: "NodeClassReady", LastTransitionTime: metav1.NewTime(epoch)},
		{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(epoch)},
	}
	return np
}

// epoch is when every generated machine was launched.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Machine returns a registered, initialized Node and its NodeClaim of the
// pool, of instance type it in zone, launched at epoch. The claim allows
// it and the other instance types named, in that capacity type.
func Machine(name, pool string, it *cloudprovider.InstanceType, zone, capacityType string, others ...string) (*corev1.Node, *v1.NodeClaim) {
	providerID := "kwok://" + name
	labels := map[string]string{
		v1.NodePoolLabelKey:            pool,
		v1.NodeInitializedLabelKey:     "true",
		v1.NodeRegisteredLabelKey:      "true",
		v1.CapacityTypeLabelKey:        capacityType,
		corev1.LabelInstanceTypeStable: it.Name,
		corev1.LabelTopologyZone:       zone,
		corev1.LabelHostname:           name,
		corev1.LabelArchStable:         "amd64",
		corev1.LabelOSStable:           "linux",
	}
	for _, r := range it.Requirements.List() {
		if vals := r.Values(); len(vals) == 1 && r.Finite() {
			if _, ok := labels[r.Key()]; !ok {
				labels[r.Key()] = vals[0]
			}
		}
	}
	node := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-node-" + name), Labels: labels, CreationTimestamp: metav1.NewTime(epoch)},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable().DeepCopy(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	claimLabels := map[string]string{}
	for k, v := range labels {
		if k != corev1.LabelHostname {
			claimLabels[k] = v
		}
	}
	cond := func(t string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: metav1.NewTime(epoch)}
	}
	nc := &v1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-nodeclaim-" + name), Labels: claimLabels, CreationTimestamp: metav1.NewTime(epoch)},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: append([]string{it.Name}, others...)},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
			},
		}},
		Status: v1.NodeClaimStatus{
			ProviderID: providerID, NodeName: name,
			Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable().DeepCopy(),
			Conditions: []metav1.Condition{cond(v1.ConditionTypeLaunched), cond(v1.ConditionTypeRegistered), cond(v1.ConditionTypeInitialized)},
		},
	}
	return node, nc
}

// Pod returns a pod of a ReplicaSet (owner) requesting cpu and memory,
// bound to node ("" for a pending pod, marked unschedulable).
func Pod(namespace, name, owner, node, cpu, memory string) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: types.UID("uid-" + namespace + "-" + name),
			Labels: map[string]string{"app": owner},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner,
				UID: types.UID("uid-rs-" + owner), Controller: new(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			}}},
		},
	}
	if node == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}}
	} else {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	}
	return p
}

// Deployment returns a Deployment of replicas pods like Pod's.
func Deployment(namespace, name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	tmpl := Pod(namespace, "", name, "", cpu, memory)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec},
		},
	}
}

// Large builds a cluster of nodes m5.2xlarge nodes in three zones, each
// running podsPerNode pods of 500m and 1Gi (so that the nodes are about
// half full), plus pending pods of 4 cpu and 8Gi (too large for the room
// left on them), in one NodePool.
func Large(types []*cloudprovider.InstanceType, nodes, podsPerNode, pending int) (*whatif.Objects, error) {
	var it *cloudprovider.InstanceType
	for _, t := range types {
		if t.Name == "m5.2xlarge" {
			it = t
		}
	}
	if it == nil {
		return nil, fmt.Errorf("instance type m5.2xlarge is not in the catalog")
	}
	o := &whatif.Objects{NodeClasses: []*unstructured.Unstructured{NodeClass("default", true)}}
	o.NodePools = []*v1.NodePool{NodePool("default", "default", 0, "30s")}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		n, nc := Machine(name, "default", it, zones[i%len(zones)], v1.CapacityTypeOnDemand)
		o.Nodes, o.NodeClaims = append(o.Nodes, n), append(o.NodeClaims, nc)
		for j := range podsPerNode {
			owner := fmt.Sprintf("app-%03d", (i*podsPerNode+j)%200)
			o.Pods = append(o.Pods, Pod("default", fmt.Sprintf("%s-%d-%d", owner, i, j), owner, name, "500m", "1Gi"))
		}
	}
	for i := range pending {
		o.Pods = append(o.Pods, Pod("default", fmt.Sprintf("pending-%d", i), "pending", "", "4", "8Gi"))
	}
	return o, nil
}
