package bench

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func readyNode(taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func TestSchedulableForInflate(t *testing.T) {
	cordoned := readyNode()
	cordoned.Spec.Unschedulable = true
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"ready, no taints", readyNode(), true},
		{"not ready", &corev1.Node{}, false},
		{"cordoned", cordoned, false},
		{"not-ready NoSchedule taint", readyNode(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}), false},
		{"not-ready NoExecute taint is tolerated", readyNode(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), true},
		{"unregistered taint", readyNode(corev1.Taint{Key: v1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}), false},
		{"PreferNoSchedule does not keep pods off", readyNode(corev1.Taint{Key: "example.com/soft", Effect: corev1.TaintEffectPreferNoSchedule}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schedulableForInflate(tc.node); got != tc.want {
				t.Errorf("schedulableForInflate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStagesOf: a pod created before its node was schedulable waits for
// the node, then for the scheduler; a pod created later waits only for the
// scheduler; a binding seen before the node's schedulable event counts as
// immediate.
func TestStagesOf(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	nodes := &nodeClock{first: make([]map[string]time.Time, len(nodeStages))}
	for i := range nodes.first {
		nodes.first[i] = map[string]time.Time{"n1": at(float64(i + 1))} // n1 schedulable at 5 s
	}
	pods := &podClock{
		seen:    map[types.UID]time.Time{"early": at(0), "late": at(7), "raced": at(0)},
		bound:   map[types.UID]time.Time{"early": at(6), "late": at(8), "raced": at(4)},
		nodeOf:  map[types.UID]string{"early": "n1", "late": "n1", "raced": "n1"},
		running: map[types.UID]time.Time{"early": at(9), "late": at(10)},
	}
	st := stagesOf(start, pods, nodes)
	seconds := func(d []time.Duration) []float64 {
		var out []float64
		for _, x := range d {
			out = append(out, x.Seconds())
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		got, want []float64
	}{
		{"wait for node", seconds(st.waitForNode), []float64{0, 4, 5}},
		{"wait for scheduler", seconds(st.waitForScheduler), []float64{0, 1, 1}},
		{"wait for start", seconds(st.waitForStart), []float64{2, 3}},
		{"node schedulable", seconds(st.nodes[schedulable]), []float64{5}},
		{"node appeared", seconds(st.nodes[0]), []float64{1}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
