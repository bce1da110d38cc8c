package simulator_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// TestInvalidInput checks that bad input yields reasons, never a panic.
func TestInvalidInput(t *testing.T) {
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	badSelector := pod("p").Obj()
	badSelector.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Resembles"}}},
	}}
	huge := pod("p").Obj()
	huge.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("9000Pi")
	runCases(t, map[string]tcase{
		"nil pods are skipped": {
			pods: []*corev1.Pod{nil, pod("p").Obj()}, claims: 1,
		},
		"quantity out of range": {
			pods: []*corev1.Pod{huge}, claims: 0, unschedulable: map[string]string{"p": "for memory is out of range"},
		},
		"invalid label selector in a spread": {
			pods: []*corev1.Pod{badSelector}, claims: 0, unschedulable: map[string]string{"p": "invalid pod: topology spread constraint 0: invalid label selector"},
		},
		"spread without a topology key": {
			pods: []*corev1.Pod{pod("p").Spread("", 1, sel("a", "b")).Obj()}, claims: 0, unschedulable: map[string]string{"p": "empty topology key"},
		},
		"spread with maxSkew 0": {
			pods: []*corev1.Pod{pod("p").ZoneSpread(0, sel("a", "b")).Obj()}, claims: 0, unschedulable: map[string]string{"p": "maxSkew 0 is not positive"},
		},
		"node affinity with an unknown operator": {
			pods: []*corev1.Pod{pod("p").NodeAffinity(zoneKey, "Near", "x").Obj()}, claims: 0, unschedulable: map[string]string{"p": "unknown operator"},
		},
		"node affinity Gt with a word": {
			pods: []*corev1.Pod{pod("p").NodeAffinity(cpuKey, corev1.NodeSelectorOpGt, "many").Obj()}, claims: 0, unschedulable: map[string]string{"p": "needs an integer value"},
		},
		"pod affinity without a topology key": {
			pods: []*corev1.Pod{pod("p").PodAffinity("", sel("a", "b")).Obj()}, claims: 0, unschedulable: map[string]string{"p": "empty topology key"},
		},
		"node without allocatable takes nothing": {
			nodes: []simulator.Node{dtesting.MakeNode("n").Obj()}, pods: []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"duplicate node names keep the first": {
			nodes: []simulator.Node{roomy("n").Obj(), roomy("n").Alloc("cpu", "100").Obj()},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0, placed: map[string]string{"p": "n"},
		},
		"nil instance types are skipped": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default"), append([]*cloudprovider.InstanceType{nil}, testCatalog()...)...)},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 1,
		},
		"minValues below one": {
			pools: []simulator.NodePool{nodepool(dtesting.MakeNodePool("default").ReqMinValues(familyKey, corev1.NodeSelectorOpExists, 0))},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0, unschedulable: map[string]string{"p": "minValues 0"},
		},
		"nodepool without instance types": {
			pools: []simulator.NodePool{{NodePool: dtesting.MakeNodePool("empty").Obj()}},
			pods:  []*corev1.Pod{pod("p").Obj()}, claims: 0, unschedulable: map[string]string{"p": "nodepool empty: no instance type has an available offering"},
		},
		"empty snapshot": {claims: 0},
	})
	if plan := simulator.New(nil, simulator.Options{}).Solve(simulator.Request{}); len(plan.NewNodeClaims) != 0 {
		t.Errorf("a nil snapshot planned nodes")
	}
}
