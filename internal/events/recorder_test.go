package events

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDedupingRecorder(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC))
	fake := record.NewFakeRecorder(100)
	r := NewRecorder(fake, clk)
	node := func() *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "1"}} }
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "2"}}
	e := func(obj *corev1.Node, msg string) Event {
		return Event{InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: "Test", Message: msg}
	}

	r.Publish(e(node(), "hello"), e(node(), "hello"))
	if got := len(fake.Events); got != 1 {
		t.Fatalf("two identical events for fresh copies of one node: %d recorded, want 1", got)
	}
	r.Publish(e(other, "hello"), e(node(), "different"))
	if got := len(fake.Events); got != 3 {
		t.Fatalf("events for another node and another message: %d recorded, want 3", got)
	}
	clk.Step(DefaultDedupeTimeout)
	r.Publish(e(node(), "hello"))
	if got := len(fake.Events); got != 4 {
		t.Fatalf("repeat after the dedupe timeout: %d recorded, want 4", got)
	}
	r.Publish(Event{InvolvedObject: node(), Type: corev1.EventTypeWarning, Reason: "Blocked", Message: "x 1", DedupeValues: []string{"a"}},
		Event{InvolvedObject: node(), Type: corev1.EventTypeWarning, Reason: "Blocked", Message: "x 2", DedupeValues: []string{"a"}})
	if got := len(fake.Events); got != 5 {
		t.Fatalf("events with equal dedupe values but different messages: %d recorded, want 5", got)
	}
}
