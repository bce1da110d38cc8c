package static_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
)

// TestDriftReplacesAStaticNodeOneForOne: a drifted node of a static pool of
// 2 is replaced by a NodeClaim of the pool (the disruption queue launches it
// and deletes the node once it is initialized) while the static controller,
// reconciling all along, neither adds a claim for the one being replaced
// nor deletes the replacement as surplus. A claim deleted from outside (as
// expiration deletes one) is brought back.
func TestDriftReplacesAStaticNodeOneForOne(t *testing.T) {
	h := newHarness(t)
	np := h.pool("static", 2, nil)
	h.reconcile(np)
	claims := h.claimsOf(np)
	for _, nc := range claims {
		h.initialize(nc)
	}
	drifted := claims[0]
	h.pod("web", drifted.Name, "500m")
	h.drift(drifted)
	h.settlePods(1)

	if wait := h.decide(); wait != 0 {
		t.Errorf("a drift command waits %v, want none", wait)
	}
	var replacement *v1.NodeClaim
	for _, nc := range h.claimsOf(np) {
		if slices.Contains(strings.Split(nc.Annotations[disrupter.ReplacesAnnotationKey], ","), drifted.Name) {
			replacement = nc
		}
	}
	if replacement == nil {
		t.Fatalf("no replacement of %s from the static pool; claims %v", drifted.Name, names(h.claimsOf(np)))
	}
	h.events.Expect(t, "DisruptionLaunching", drifted.Name, "Launching NodeClaim "+replacement.Name)
	// The static controller counts the replacement instead of the
	// candidate: nothing created, nothing deleted.
	h.reconcile(np)
	want := names(h.claimsOf(np))
	if len(want) != 3 {
		t.Fatalf("claims during the drift %v, want the two and the replacement", want)
	}

	h.initialize(replacement)
	h.step()
	h.reconcile(np)
	if left := h.claimsOf(np); slices.ContainsFunc(left, func(nc *v1.NodeClaim) bool { return nc.Name == drifted.Name }) {
		t.Fatalf("drifted claim %s still there after its replacement initialized: %v", drifted.Name, names(left))
	}
	wantLeft := []string{claims[1].Name, replacement.Name}
	slices.Sort(wantLeft)
	if diff := cmp.Diff(wantLeft, names(h.claimsOf(np))); diff != "" {
		t.Errorf("claims after the drift (-want +got):\n%s", diff)
	}

	// Expiration (or anyone) deletes a claim: the count brings a new one.
	if err := h.direct.Delete(h.ctx, claims[1]); err != nil {
		t.Fatal(err)
	}
	h.reconcile(np)
	got := h.claimsOf(np)
	if len(got) != 2 || slices.ContainsFunc(got, func(nc *v1.NodeClaim) bool { return nc.Name == claims[1].Name }) {
		t.Errorf("claims after one was deleted: %v, want the replacement and a new one", names(got))
	}
}
