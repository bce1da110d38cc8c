package unavailable

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// TTL is how long a mark lasts.
const TTL = 3 * time.Minute

// Offering identifies an offering: an instance type in a zone with a
// capacity type (on-demand, spot).
type Offering struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// mark is when a mark expires and why it was made.
type mark struct {
	until  time.Time
	reason string
}

// Cache remembers unavailable offerings and capacity types for TTL. Build it
// with New.
type Cache struct {
	clock clock.Clock

	mu            sync.Mutex
	offerings     map[Offering]mark
	capacityTypes map[string]mark
	seqNum        uint64
	// next is the earliest expiry of a live mark; zero when there is none.
	// Reads before it skip the scan for expired marks.
	next time.Time
}

// New returns an empty cache that measures TTL with clk.
func New(clk clock.Clock) *Cache {
	return &Cache{clock: clk, offerings: map[Offering]mark{}, capacityTypes: map[string]mark{}}
}

// MarkUnavailable marks an offering unavailable for TTL from now, replacing
// an earlier mark of it, and bumps SeqNum. reason is kept for Reason.
func (c *Cache) MarkUnavailable(instanceType, zone, capacityType, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	m := c.newMarkLocked(reason)
	c.offerings[Offering{InstanceType: instanceType, Zone: zone, CapacityType: capacityType}] = m
	c.seqNum++
}

// MarkCapacityTypeUnavailable marks every offering of a capacity type
// unavailable for TTL from now (for example spot, when the spot service-linked
// role cannot be created), and bumps SeqNum.
func (c *Cache) MarkCapacityTypeUnavailable(capacityType, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	c.capacityTypes[capacityType] = c.newMarkLocked(reason)
	c.seqNum++
}

// IsUnavailable reports whether the offering, or its whole capacity type, is
// marked and the mark has not expired.
func (c *Cache) IsUnavailable(instanceType, zone, capacityType string) bool {
	_, ok := c.Reason(instanceType, zone, capacityType)
	return ok
}

// Reason returns the reason of the live mark that makes the offering
// unavailable (the capacity type's first), and whether there is one.
func (c *Cache) Reason(instanceType, zone, capacityType string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	if m, ok := c.capacityTypes[capacityType]; ok {
		return m.reason, true
	}
	if m, ok := c.offerings[Offering{InstanceType: instanceType, Zone: zone, CapacityType: capacityType}]; ok {
		return m.reason, true
	}
	return "", false
}

// SeqNum returns a number that changes whenever the set of unavailable
// offerings does: on every mark and when marks expire. Caches of anything
// computed from availability keep it in their key.
func (c *Cache) SeqNum() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.seqNum
}

// Len returns the number of live offering and capacity-type marks.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return len(c.offerings) + len(c.capacityTypes)
}

// newMarkLocked returns a mark that expires TTL from now and keeps next up
// to date. The caller holds c.mu.
func (c *Cache) newMarkLocked(reason string) mark {
	m := mark{until: c.clock.Now().Add(TTL), reason: reason}
	if c.next.IsZero() || m.until.Before(c.next) {
		c.next = m.until
	}
	return m
}

// expireLocked drops the expired marks, bumping seqNum once if it dropped
// any. The caller holds c.mu.
func (c *Cache) expireLocked() {
	now := c.clock.Now()
	if c.next.IsZero() || now.Before(c.next) {
		return
	}
	c.next = time.Time{}
	expired := false
	keep := func(m mark) bool {
		if !now.Before(m.until) {
			expired = true
			return false
		}
		if c.next.IsZero() || m.until.Before(c.next) {
			c.next = m.until
		}
		return true
	}
	for k, m := range c.offerings {
		if !keep(m) {
			delete(c.offerings, k)
		}
	}
	for k, m := range c.capacityTypes {
		if !keep(m) {
			delete(c.capacityTypes, k)
		}
	}
	if expired {
		c.seqNum++
	}
}
