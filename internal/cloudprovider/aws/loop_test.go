package aws

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	testclock "k8s.io/utils/clock/testing"
)

// TestLoopRetriesSoonAfterAFailure: a refresh that failed (the Pricing API
// briefly unreachable) runs again after loopRetryAfterFailure, not a whole
// period later; once it succeeds, the period applies again.
func TestLoopRetriesSoonAfterAFailure(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var runs atomic.Int32
	ran := make(chan struct{}, 10)
	l := &loop{name: "test", clock: clk, period: 12 * time.Hour, run: func(context.Context) error {
		n := runs.Add(1)
		ran <- struct{}{}
		if n == 1 {
			return errors.New("pricing unreachable")
		}
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start() = %v", err)
		}
	}()

	waitRun := func(want int32) {
		t.Helper()
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d did not happen", want)
		}
		if got := runs.Load(); got != want {
			t.Fatalf("runs = %d, want %d", got, want)
		}
		// The loop now waits on its timer.
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return clk.HasWaiters(), nil
		})
		if err != nil {
			t.Fatalf("the loop never waited on its timer: %v", err)
		}
	}
	waitRun(1) // fails
	clk.Step(loopRetryAfterFailure)
	waitRun(2) // succeeds
	clk.Step(loopRetryAfterFailure)
	if !clk.HasWaiters() {
		t.Fatal("after a success the loop ran again within loopRetryAfterFailure, want a whole period")
	}
	clk.Step(12*time.Hour - loopRetryAfterFailure)
	waitRun(3)
}
