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

// fleetErrorMessages are the per-override error codes SetFleetError can make
// CreateFleet report, each with the message EC2 sends with it: account
// limits (MaxSpotInstanceCountExceeded, VcpuLimitExceeded,
// MaxFleetCountExceeded), a request EC2 cannot fulfil
// (UnfulfillableCapacity), and a launch the caller may not make
// (UnauthorizedOperation, e.g. iam:PassRole on the instance profile).
var fleetErrorMessages = map[string]string{
	"MaxSpotInstanceCountExceeded": "Max spot instance count exceeded",
	"VcpuLimitExceeded": "You have requested more vCPU capacity than your current vCPU limit of 32 allows for the instance bucket that the specified instance type belongs to. " +
		"Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.",
	"MaxFleetCountExceeded": "You have reached the maximum number of fleets for this account.",
	"UnfulfillableCapacity": "Unable to fulfill capacity due to your request configuration. Please adjust your request and try again.",
	"UnauthorizedOperation": "You are not authorized to perform this operation. Encoded authorization failure message: " +
		"dovetail-local-endpoint-does-not-encode-authorization-failures",
}

// SetFleetError makes CreateFleet report a capacity pool's overrides with
// code (MaxSpotInstanceCountExceeded, VcpuLimitExceeded,
// MaxFleetCountExceeded, UnfulfillableCapacity or UnauthorizedOperation) and
// EC2's message for it in its errorSet, as it reports
// InsufficientInstanceCapacity, instead of launching from the pool; ""
// clears it. capacityType is CapacityTypeSpot or CapacityTypeOnDemand. The
// pool's code takes precedence over SetInsufficientCapacity.
func (s *Service) SetFleetError(instanceType, zone, capacityType, code string) error {
	if _, ok := fleetErrorMessages[code]; !ok && code != "" {
		return fmt.Errorf("setting CreateFleet error %q for %s in %s (%s): not one of the codes modelled", code, instanceType, zone, capacityType)
	}
	if capacityType != CapacityTypeSpot && capacityType != CapacityTypeOnDemand {
		return fmt.Errorf("setting CreateFleet error %q for %s in %s: capacity type %q is neither %s nor %s", code, instanceType, zone, capacityType, CapacityTypeSpot, CapacityTypeOnDemand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := offeringKey{instanceType, zone, capacityType}
	if code == "" {
		delete(s.st.fleetErrors, k)
	} else {
		s.st.fleetErrors[k] = code
	}
	return nil
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
