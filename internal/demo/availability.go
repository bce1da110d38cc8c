package demo

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// availability follows an app's pods from every watch event and remembers
// the fewest Ready pods seen while recording.
type availability struct {
	mu        sync.Mutex
	ready     map[string]bool
	minimum   int
	recording bool
	stop      chan struct{}
}

func watchAvailability(cs kubernetes.Interface, namespace, app string) (*availability, error) {
	a := &availability{ready: map[string]bool{}, minimum: -1, stop: make(chan struct{})}
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
			a.ready[pod.Name] = pod.DeletionTimestamp == nil && isReady(pod)
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

func (a *availability) observe() {
	if !a.recording {
		return
	}
	if n := a.countLocked(); a.minimum < 0 || n < a.minimum {
		a.minimum = n
	}
}

func (a *availability) countLocked() int {
	n := 0
	for _, r := range a.ready {
		if r {
			n++
		}
	}
	return n
}

// record starts remembering the minimum.
func (a *availability) record() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recording = true
	a.observe()
}

// now returns the Ready pods now and the minimum seen while recording.
func (a *availability) now() (ready, minimum int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.countLocked(), a.minimum
}

func (a *availability) close() { close(a.stop) }

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
