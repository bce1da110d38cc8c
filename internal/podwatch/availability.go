// Package podwatch follows an application's pods through a watch, for
// checks that must see every change rather than samples: the demo and the
// end-to-end tests use it to prove a PodDisruptionBudget held while nodes
// were drained or consolidated.
package podwatch

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// Availability follows an app's pods from every watch event (not by
// sampling) and remembers the fewest Ready pods seen while recording: the
// check that a drain or a consolidation never broke a PodDisruptionBudget.
type Availability struct {
	mu        sync.Mutex
	ready     map[string]bool
	minimum   int
	recording bool
	stop      chan struct{}
}

// Watch starts following the Ready pods labelled app=<app> in the namespace;
// Close stops it.
func Watch(cs kubernetes.Interface, namespace, app string) (*Availability, error) {
	a := &Availability{ready: map[string]bool{}, minimum: -1, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + app }))
	update := func(obj any, gone bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
				pod, ok = tomb.Obj.(*corev1.Pod)
			}
		}
		if !ok {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if gone {
			delete(a.ready, pod.Name)
		} else {
			a.ready[pod.Name] = pod.DeletionTimestamp == nil && podutil.IsReady(pod)
		}
		a.observe()
	}
	registration, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { update(obj, false) },
		UpdateFunc: func(_, obj any) { update(obj, false) },
		DeleteFunc: func(obj any) { update(obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s pods: %w", app, err)
	}
	factory.Start(a.stop)
	// Wait until the handler itself has seen every existing pod, not just
	// the informer's cache: recording before that would see a partial count.
	if !cache.WaitForCacheSync(a.stop, registration.HasSynced) {
		return nil, fmt.Errorf("watching %s pods: cache did not sync", app)
	}
	return a, nil
}

func (a *Availability) observe() {
	if !a.recording {
		return
	}
	if n := a.countLocked(); a.minimum < 0 || n < a.minimum {
		a.minimum = n
	}
}

func (a *Availability) countLocked() int {
	n := 0
	for _, r := range a.ready {
		if r {
			n++
		}
	}
	return n
}

// Record starts remembering the minimum, from the current count.
func (a *Availability) Record() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recording = true
	a.observe()
}

// Now returns the Ready pods now and the minimum seen while recording (-1
// before Record).
func (a *Availability) Now() (ready, minimum int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.countLocked(), a.minimum
}

// Close stops following the pods.
func (a *Availability) Close() { close(a.stop) }
