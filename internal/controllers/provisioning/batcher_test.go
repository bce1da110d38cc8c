package provisioning

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBatchEnd(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		lastAfter time.Duration
		want      time.Duration
	}{
		"single trigger closes one idle window later": {lastAfter: 0, want: time.Second},
		"late trigger extends the batch":              {lastAfter: 4 * time.Second, want: 5 * time.Second},
		"triggers cannot extend past the max window":  {lastAfter: 9800 * time.Millisecond, want: 10 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := batchEnd(start, start.Add(tc.lastAfter), time.Second, 10*time.Second)
			if got.Sub(start) != tc.want {
				t.Errorf("batchEnd = start+%v, want start+%v", got.Sub(start), tc.want)
			}
		})
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBatcher(clk, time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx, time.Hour) {
		t.Error("Wait with a cancelled context returned true")
	}
	b.Trigger()
	if b.Wait(ctx, time.Hour) {
		t.Error("Wait with a cancelled context and a pending trigger returned true")
	}
}

func TestBatcherClosesImmediatelyWithZeroWindows(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBatcher(clk, 0, 0)
	b.Trigger()
	b.Trigger() // coalesced into the same batch
	if !b.Wait(context.Background(), time.Hour) {
		t.Fatal("Wait after a trigger with zero windows returned false")
	}
	select {
	case <-b.trigger:
		t.Error("a second trigger was queued; triggers should coalesce")
	default:
	}
}

// TestTriggerGroup: a group's later triggers do not extend the batch its
// first trigger opened; after the batch is collected, the group triggers
// again.
func TestTriggerGroup(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBatcher(clk, 0, 0)
	b.TriggerGroup("rs-1")
	if !b.Wait(context.Background(), time.Hour) {
		t.Fatal("Wait after the group's first trigger returned false")
	}
	queued := func() bool {
		select {
		case <-b.trigger:
			return true
		default:
			return false
		}
	}
	b.TriggerGroup("rs-1")
	if !queued() {
		t.Fatal("the group did not trigger again after its batch was collected")
	}
	b.TriggerGroup("rs-1")
	if queued() {
		t.Error("the group's second trigger in the same batch was queued")
	}
	b.TriggerGroup("rs-2")
	if !queued() {
		t.Error("another group's first trigger was not queued")
	}
	b.Trigger()
	if !queued() {
		t.Error("an ungrouped trigger was not queued")
	}
}
