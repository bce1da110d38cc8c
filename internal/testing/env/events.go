package env

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// EventLog is an events.Recorder that keeps what controllers publish, for
// tests to assert on.
type EventLog struct {
	mu     sync.Mutex
	events []events.Event
}

// Publish records the events.
func (l *EventLog) Publish(evts ...events.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, evts...)
}

// Messages returns the messages of the events with the reason about the
// named object.
func (l *EventLog) Messages(reason, name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if obj, err := meta.Accessor(e.InvolvedObject); err == nil && e.Reason == reason && obj.GetName() == name {
			out = append(out, e.Message)
		}
	}
	return out
}

// Expect fails the test unless an event with the reason about the named
// object has a message containing want.
func (l *EventLog) Expect(t testing.TB, reason, name, want string) {
	t.Helper()
	got := l.Messages(reason, name)
	if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, want) }) {
		t.Errorf("no %s event for %s containing %q; got %q", reason, name, want, got)
	}
}
