package aws_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/garbagecollection"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

// TestGarbageCollectionTerminatesInstancesWithoutClaims drives the core's
// garbage collector over the AWS provider: an instance tagged for the
// cluster whose NodeClaim the API server does not have is terminated once
// it is older than the grace period; an instance whose claim records it,
// and one whose claim exists but has not recorded its launch yet, are kept.
func TestGarbageCollectionTerminatesInstancesWithoutClaims(t *testing.T) {
	h := newHarness(t, "gc")
	ctx := context.Background()
	h.createClass(t, h.defaultClass("gc"))
	h.reconcile(t, "gc")
	cp := h.rt.CloudProvider
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	gc := garbagecollection.NewController(h.clock, testEnv.Client, cp, m, garbagecollection.DefaultOptions())

	launch := func(name string) string {
		t.Helper()
		launched, err := cp.Create(ctx, claimFor(name, "gc", []string{"m5.large"}, []string{"on-demand"}))
		if err != nil {
			t.Fatalf("Create %s: %v", name, err)
		}
		return launched.Status.ProviderID
	}
	// "recorded": its claim is in the API server with the provider ID.
	recordedID := launch("gc-recorded")
	recorded := claimFor("gc-recorded", "gc", []string{"m5.large"}, []string{"on-demand"})
	if err := testEnv.Client.Create(ctx, recorded); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), recorded) })
	recorded.Status.ProviderID = recordedID
	if err := testEnv.Client.Status().Update(ctx, recorded); err != nil {
		t.Fatal(err)
	}
	// "unrecorded": its claim exists but its status write was lost.
	unrecordedID := launch("gc-unrecorded")
	unrecorded := claimFor("gc-unrecorded", "gc", []string{"m5.large"}, []string{"on-demand"})
	if err := testEnv.Client.Create(ctx, unrecorded); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), unrecorded) })
	// "orphan": no claim at all (a controller that crashed after CreateFleet
	// and whose claim was then deleted).
	orphanID := launch("gc-orphan")

	states := func() map[string]localec2.InstanceState {
		out := map[string]localec2.InstanceState{}
		for _, inst := range h.server.EC2().Instances() {
			out["aws:///"+inst.Zone+"/"+inst.ID] = inst.State
		}
		return out
	}
	alive := func(s localec2.InstanceState) bool {
		return s == localec2.StatePending || s == localec2.StateRunning
	}

	// 1. Within the grace period nothing is terminated.
	if err := gc.Collect(ctx); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	for id, s := range states() {
		if !alive(s) {
			t.Fatalf("instance %s is %s after a pass inside the grace period", id, s)
		}
	}
	// 2. Past it, the orphan alone is terminated.
	h.clock.Step(garbagecollection.DefaultOptions().MinInstanceAge)
	if err := gc.Collect(ctx); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := states()
	if alive(got[orphanID]) {
		t.Errorf("orphan %s is %s, want terminating", orphanID, got[orphanID])
	}
	for _, id := range []string{recordedID, unrecordedID} {
		if !alive(got[id]) {
			t.Errorf("instance %s of an existing claim is %s, want kept", id, got[id])
		}
	}
	t.Logf("instances after garbage collection: %v", got)
}
