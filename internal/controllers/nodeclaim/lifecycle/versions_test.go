package lifecycle

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestSupersededVersions: every version a chain of writes replaced is
// stale; the current one is not; a version the writes did not replace
// means the cache caught up and ends the entry; entries expire.
func TestSupersededVersions(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	s := newSupersededVersions(clk)
	// A pass read version 10, added the finalizer (11), patched the
	// metadata (12) and the status (13).
	for _, v := range [][2]string{{"10", "11"}, {"11", "12"}, {"12", "13"}} {
		s.wrote("a", v[0], v[1])
	}
	for _, step := range []struct {
		uid     types.UID
		version string
		want    bool
	}{
		{"a", "10", true}, {"a", "11", true}, {"a", "12", true},
		{"b", "10", false}, // another claim
		{"a", "13", false}, // the cache caught up: the entry ends
		{"a", "12", false}, // and is gone
	} {
		if got := s.isSuperseded(step.uid, step.version); got != step.want {
			t.Errorf("isSuperseded(%s, %s) = %v, want %v", step.uid, step.version, got, step.want)
		}
	}
	s.wrote("a", "20", "21")
	s.wrote("a", "", "22")
	s.wrote("d", "7", "7") // a write that changed nothing
	clk.Step(supersededTTL)
	if s.isSuperseded("a", "20") {
		t.Error("an entry older than its TTL still marks its version stale")
	}
	if s.isSuperseded("a", "") {
		t.Error("an empty version was recorded")
	}
	if s.isSuperseded("d", "7") {
		t.Error("a write that kept the version marked it stale")
	}
	s.wrote("c", "5", "6")
	s.forget("c")
	if s.isSuperseded("c", "5") {
		t.Error("a forgotten claim's version is still stale")
	}
}
