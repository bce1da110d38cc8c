package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/lifecycle"
)

// TestLaunchThatKeepsFailingIsDeletedByLiveness checks that every phase runs
// on every pass: a claim whose Create fails with an error that is retried
// (not insufficient capacity) still reaches liveness, which deletes it once
// the launch timeout has passed, instead of holding room forever.
func TestLaunchThatKeepsFailingIsDeletedByLiveness(t *testing.T) {
	cases := map[string]struct {
		name string
		err  error
	}{
		"create error": {name: "create-error", err: cloudprovider.NewCreateError(errors.New("boom"), "SubnetsNotFound", "no subnet in zone")},
		"other error":  {name: "other", err: errors.New("api throttled")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			nc := newClaim(t, "lifecycle-keeps-failing-"+tc.name)
			// The claim is created after the fake clock started: time the
			// passes from its creation, as liveness does.
			deadline := nc.CreationTimestamp.Add(lifecycle.DefaultOptions().LaunchTimeout)
			got := nc
			for _, at := range []time.Time{deadline.Add(-4 * time.Minute), deadline.Add(-time.Second), deadline.Add(time.Second)} {
				h.clock.SetTime(at)
				h.provider.Lock()
				h.provider.NextCreateErr = tc.err
				h.provider.Unlock()
				var err error
				got, err = h.reconcile(t, got)
				if err == nil && at.Before(deadline) {
					t.Errorf("at %s: Reconcile returned no error for a failing launch", at.Sub(deadline))
				}
				if beforeDeadline := at.Before(deadline); beforeDeadline != (got.DeletionTimestamp == nil) {
					t.Fatalf("at %s from the launch deadline: deleted = %v, want %v (reconcile: %v)", at.Sub(deadline), got.DeletionTimestamp != nil, !beforeDeadline, err)
				}
			}
		})
	}
}
