package handoff

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestReported: a node's room is judged (and a pod refused it) only once
// the node reports every resource the pod requests; a GPU pod on a node
// whose device plugin has not registered yet waits.
func TestReported(t *testing.T) {
	node := func(names ...corev1.ResourceName) *corev1.Node {
		n := &corev1.Node{}
		if names != nil {
			n.Status.Allocatable = corev1.ResourceList{}
		}
		for _, name := range names {
			n.Status.Allocatable[name] = resource.MustParse("4")
		}
		return n
	}
	gpu := corev1.ResourceName("nvidia.com/gpu")
	requests := func(names ...corev1.ResourceName) corev1.ResourceList {
		r := corev1.ResourceList{}
		for _, name := range names {
			r[name] = resource.MustParse("1")
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		node     *corev1.Node
		requests corev1.ResourceList
		want     bool
	}{
		{"no status yet", node(), requests(corev1.ResourcePods), false},
		{"cpu and pods reported", node(corev1.ResourceCPU, corev1.ResourcePods), requests(corev1.ResourceCPU, corev1.ResourcePods), true},
		{"the gpu not reported yet", node(corev1.ResourceCPU, corev1.ResourcePods), requests(corev1.ResourcePods, gpu), false},
		{"the gpu reported", node(corev1.ResourceCPU, corev1.ResourcePods, gpu), requests(corev1.ResourcePods, gpu), true},
		{"a zero request needs nothing", node(corev1.ResourcePods), corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), gpu: resource.MustParse("0")}, true},
	} {
		if got := reported(tc.node, tc.requests); got != tc.want {
			t.Errorf("%s: reported = %v, want %v", tc.name, got, tc.want)
		}
	}
}
