package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Batcher groups triggers into batches: a batch opens with the first
// trigger, stays open while triggers keep arriving within the idle window,
// and closes after the idle window passes quietly or the max window ends.
type Batcher struct {
	clock   clock.Clock
	idle    time.Duration
	max     time.Duration
	trigger chan struct{}

	mu sync.Mutex
	// groups are the keys TriggerGroup saw since the last batch was
	// collected.
	groups map[string]bool
}

// NewBatcher returns a Batcher with the given idle and max windows.
func NewBatcher(clk clock.Clock, idle, maxWindow time.Duration) *Batcher {
	return &Batcher{clock: clk, idle: idle, max: maxWindow, trigger: make(chan struct{}, 1)}
}

// Trigger asks for a batch. It never blocks.
func (b *Batcher) Trigger() {
	select {
	case b.trigger <- struct{}{}:
	default:
	}
}

// TriggerGroup asks for a batch on behalf of a group of pods (see
// podutil.SiblingKey): only the group's first trigger since the last batch
// was collected counts. The pass that collects the batch takes every pod
// of the group, so the group's later pods need not hold the batch open:
// 1,000 replicas marked unschedulable one after the other over 4 s would
// otherwise keep the idle window from closing until the last one.
func (b *Batcher) TriggerGroup(key string) {
	b.mu.Lock()
	seen := b.groups[key]
	if !seen {
		if b.groups == nil {
			b.groups = map[string]bool{}
		}
		b.groups[key] = true
	}
	b.mu.Unlock()
	if !seen {
		b.Trigger()
	}
}

// Wait blocks until a batch has been collected (true), or until ctx ends or
// the poll period passes without any trigger (false).
func (b *Batcher) Wait(ctx context.Context, poll time.Duration) bool {
	pollTimer := b.clock.NewTimer(poll)
	select {
	case <-ctx.Done():
		pollTimer.Stop()
		return false
	case <-pollTimer.C():
		return false
	case <-b.trigger:
		pollTimer.Stop()
	}
	start := b.clock.Now()
	last := start
	for {
		remaining := batchEnd(start, last, b.idle, b.max).Sub(b.clock.Now())
		if remaining <= 0 {
			b.mu.Lock()
			b.groups = nil
			b.mu.Unlock()
			return true
		}
		timer := b.clock.NewTimer(remaining)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C():
		case <-b.trigger:
			timer.Stop()
			last = b.clock.Now()
		}
	}
}

// batchEnd is when a batch that opened at start and was last triggered at
// last closes: one idle window after the last trigger, at most max after start.
func batchEnd(start, last time.Time, idle, maxWindow time.Duration) time.Time {
	end := last.Add(idle)
	if limit := start.Add(maxWindow); limit.Before(end) {
		return limit
	}
	return end
}
