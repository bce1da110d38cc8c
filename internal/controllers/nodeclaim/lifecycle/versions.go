package lifecycle

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// supersededTTL bounds how long the versions a write replaced are kept: the
// informer delivers the write within moments; an entry it never clears (the
// claim was deleted meanwhile) goes after this.
const supersededTTL = time.Minute

// supersededVersions remembers, by claim UID, the resourceVersions that this
// controller's own successful writes replaced. The informer cache delivers
// a write a little after it succeeds, and a reconcile that starts in
// between reads the version the write replaced: re-running every phase on
// it repeats the registration (the Node patch and the nomination of every
// planned pod) and ends in a conflict on the status write. In a 1,000-pod
// scale-out half of the passes did that, and each claim's registration ran
// about five times. A pass that reads a superseded version is skipped; the
// watch event of the newer version brings the claim back. Versions are
// compared for equality only. It is safe for concurrent use.
type supersededVersions struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byUID map[types.UID]supersededEntry
}

type supersededEntry struct {
	versions []string
	expires  time.Time
}

func newSupersededVersions(clk clock.PassiveClock) *supersededVersions {
	return &supersededVersions{clock: clk, byUID: map[types.UID]supersededEntry{}}
}

// wrote records that a successful write of this controller to the claim
// turned version before into after. before is then superseded, unless the
// write changed nothing (after equals before: the version is current).
func (s *supersededVersions) wrote(uid types.UID, before, after string) {
	if before == "" || before == after {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	maps.DeleteFunc(s.byUID, func(_ types.UID, e supersededEntry) bool { return !now.Before(e.expires) })
	e := s.byUID[uid]
	if !slices.Contains(e.versions, before) {
		e.versions = append(e.versions, before)
	}
	e.expires = now.Add(supersededTTL)
	s.byUID[uid] = e
}

// isSuperseded reports whether version is one a write of this controller
// replaced, so the copy holding it is stale. A version it does not know
// means the cache has caught up with the writes (it only moves forward),
// and the claim's entry is dropped.
func (s *supersededVersions) isSuperseded(uid types.UID, version string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byUID[uid]
	if !ok {
		return false
	}
	if !s.clock.Now().Before(e.expires) || !slices.Contains(e.versions, version) {
		delete(s.byUID, uid)
		return false
	}
	return true
}

// forget drops what is known of the claim.
func (s *supersededVersions) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
}
