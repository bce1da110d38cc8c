package ec2

import (
	"fmt"
	"time"
)

// offeringKey identifies a capacity pool: an instance type in a zone with a
// capacity type.
type offeringKey struct {
	instanceType, zone, capacityType string
}

// SetInsufficientCapacity turns a capacity pool's shortage on or off. While
// on, CreateFleet skips the pool's overrides and reports each with
// InsufficientInstanceCapacity. capacityType is CapacityTypeSpot or
// CapacityTypeOnDemand.
func (s *Service) SetInsufficientCapacity(instanceType, zone, capacityType string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := offeringKey{instanceType, zone, capacityType}
	if on {
		s.st.ice[k] = true
	} else {
		delete(s.st.ice, k)
	}
}

// SetThrottle makes that fraction of requests (0 to 1) fail with
// RequestLimitExceeded (HTTP 503) before they are served. Which requests
// fail is drawn from a source seeded by Config.Seed.
func (s *Service) SetThrottle(rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.throttleRate = min(max(rate, 0), 1)
}

// SetDescribeLag models EC2's eventual consistency: for d after its launch,
// by the clock, an instance is InvalidInstanceID.NotFound to
// DescribeInstances by id and absent from its lists. 0 turns it off.
func (s *Service) SetDescribeLag(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.describeLag = max(d, 0)
}

// StopInstance stops an instance behind the client's back, as a scheduled
// retirement would: pending or running -> stopping -> stopped after
// Config.StoppingDelay.
func (s *Service) StopInstance(id string) error {
	s.mu.Lock()
	s.advanceLocked()
	in, ok := s.st.byID[id]
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("stopping instance %s: not found", id)
	case in.State != StatePending && in.State != StateRunning:
		err = fmt.Errorf("stopping instance %s: it is %s", id, in.State)
	default:
		s.setStateLocked(in, StateStopping, "Server.ScheduledStop", s.now())
	}
	s.mu.Unlock()
	s.notify()
	return err
}

// TerminateInstance terminates an instance behind the client's back, as a
// spot reclaim or a host failure would: -> shutting-down -> terminated after
// Config.ShuttingDownDelay. The state reason is
// Server.SpotInstanceTermination for spot instances, else
// Server.InternalError. Terminating a terminating instance is a no-op.
func (s *Service) TerminateInstance(id string) error {
	s.mu.Lock()
	s.advanceLocked()
	in, ok := s.st.byID[id]
	var err error
	if !ok {
		err = fmt.Errorf("terminating instance %s: not found", id)
	} else {
		reason := "Server.InternalError"
		if in.CapacityType == CapacityTypeSpot {
			reason = "Server.SpotInstanceTermination"
		}
		s.terminateLocked(in, reason)
	}
	s.mu.Unlock()
	s.notify()
	return err
}
