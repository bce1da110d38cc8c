// Package nodewatch follows, for end-to-end tests, the Nodes of a NodePool
// being disrupted: from every Node event (not by sampling) it records the
// most nodes disrupted at once (carrying the karpenter.sh/disrupted taint or
// being deleted) and which nodes ever were, so a test can check that
// disruption stayed inside a budget or left given nodes alone.
package nodewatch

import (
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Disruptions is the record of one pool's disrupted Nodes.
type Disruptions struct {
	mu      sync.Mutex
	now     map[string]bool
	ever    map[string]bool
	maximum int
}

// Watch starts following the pool's Nodes until the test ends.
func Watch(t testing.TB, clientset kubernetes.Interface, pool string) *Disruptions {
	t.Helper()
	w := &Disruptions{now: map[string]bool{}, ever: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1.NodePoolLabelKey + "=" + pool }))
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.record, UpdateFunc: func(_, obj any) { w.record(obj) }, DeleteFunc: w.remove,
	}); err != nil {
		t.Fatalf("watching the nodes of pool %s: %v", pool, err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return w
}

func (w *Disruptions) record(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	disrupted := node.DeletionTimestamp != nil || slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == v1.DisruptedTaintKey
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now[node.Name] = disrupted
	if disrupted {
		w.ever[node.Name] = true
	}
	n := 0
	for _, d := range w.now {
		if d {
			n++
		}
	}
	w.maximum = max(w.maximum, n)
}

func (w *Disruptions) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.now, node.Name)
}

// Max is the most nodes that were disrupted at once.
func (w *Disruptions) Max() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maximum
}

// WasDisrupted reports whether the node was ever disrupted.
func (w *Disruptions) WasDisrupted(node string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ever[node]
}
