// Package events publishes Kubernetes events about NodePools, NodeClaims,
// Nodes and Pods, deduplicating repeats so that a decision re-evaluated every
// few seconds does not flood the API server. Controllers keep their event
// reasons and messages in one file each, built as Event values here.
package events

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Event is one event to publish.
type Event struct {
	// InvolvedObject is the object the event is about.
	InvolvedObject runtime.Object
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is a short UpperCamel reason, compatible with Karpenter's.
	Reason string
	// Message is a human-readable sentence.
	Message string
	// DedupeValues identify repeats: an event with the same reason and dedupe
	// values is dropped until DedupeTimeout has passed. Empty means the
	// message itself is the key.
	DedupeValues []string
	// DedupeTimeout is how long repeats are suppressed; DefaultDedupeTimeout when zero.
	DedupeTimeout time.Duration
}

// DefaultDedupeTimeout suppresses repeats of an event for two minutes.
const DefaultDedupeTimeout = 2 * time.Minute

// Recorder publishes events.
type Recorder interface {
	Publish(events ...Event)
}

// NewRecorder returns a Recorder that deduplicates events before handing them
// to the Kubernetes event recorder.
func NewRecorder(r record.EventRecorder, clk clock.PassiveClock) *DedupingRecorder {
	return &DedupingRecorder{rec: r, clock: clk, seen: map[string]time.Time{}}
}

// DedupingRecorder is a Recorder with a time-bounded dedupe cache.
type DedupingRecorder struct {
	rec   record.EventRecorder
	clock clock.PassiveClock

	mu   sync.Mutex
	seen map[string]time.Time // dedupe key -> expiry
}

// Publish records each event unless an identical one was recorded recently.
func (r *DedupingRecorder) Publish(events ...Event) {
	for _, e := range events {
		if !r.admit(e) {
			continue
		}
		r.rec.Event(e.InvolvedObject, e.Type, e.Reason, e.Message)
	}
}

func (r *DedupingRecorder) admit(e Event) bool {
	key := dedupeKey(e)
	timeout := e.DedupeTimeout
	if timeout == 0 {
		timeout = DefaultDedupeTimeout
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if expiry, ok := r.seen[key]; ok && now.Before(expiry) {
		return false
	}
	r.seen[key] = now.Add(timeout)
	if len(r.seen) > 10000 {
		for k, expiry := range r.seen {
			if !now.Before(expiry) {
				delete(r.seen, k)
			}
		}
	}
	return true
}

func dedupeKey(e Event) string {
	values := e.DedupeValues
	if len(values) == 0 {
		values = []string{e.Message}
	}
	return fmt.Sprintf("%s/%s/%s/%s", e.Reason, e.Type, objectKey(e.InvolvedObject), strings.Join(values, "/"))
}

// objectKey identifies an object by kind, namespace, name and UID.
func objectKey(obj runtime.Object) string {
	kind := fmt.Sprintf("%T", obj)
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return kind
	}
	return fmt.Sprintf("%s/%s/%s/%s", kind, accessor.GetNamespace(), accessor.GetName(), accessor.GetUID())
}
