package lifecycle

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// launchCacheTTL bounds how long a launch is remembered: long enough for the
// claim's status write to land and reach the cache, short enough that a
// claim deleted without being seen again is forgotten.
const launchCacheTTL = 5 * time.Minute

// launchCache remembers, by claim UID, what Create returned for claims whose
// Launched condition has not been read back yet, so that a reconcile of a
// stale claim (a retried conflict, an informer lagging behind the write)
// does not launch, log and count the launch again. It is safe for
// concurrent use.
type launchCache struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byUID map[types.UID]launchEntry
}

type launchEntry struct {
	created *v1.NodeClaim
	expires time.Time
}

func newLaunchCache(clk clock.PassiveClock) *launchCache {
	return &launchCache{clock: clk, byUID: map[types.UID]launchEntry{}}
}

// put remembers a launch, and forgets expired ones.
func (l *launchCache) put(uid types.UID, created *v1.NodeClaim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	maps.DeleteFunc(l.byUID, func(_ types.UID, e launchEntry) bool { return !now.Before(e.expires) })
	l.byUID[uid] = launchEntry{created: created.DeepCopy(), expires: now.Add(launchCacheTTL)}
}

// get returns the remembered launch of the claim, if any and not expired.
func (l *launchCache) get(uid types.UID) (*v1.NodeClaim, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byUID[uid]
	if !ok || !l.clock.Now().Before(e.expires) {
		return nil, false
	}
	return e.created.DeepCopy(), true
}

// forget drops the claim's launch (it is recorded on the claim, or the
// claim is going).
func (l *launchCache) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byUID, uid)
}
