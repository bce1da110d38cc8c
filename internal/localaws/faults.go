package localaws

import (
	"fmt"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/sqs"
)

// SpotReclaimDelay is how long after its interruption warning EC2 reclaims a
// spot instance: "two minutes before Amazon EC2 stops or terminates your
// Spot Instance"
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
const SpotReclaimDelay = 2 * time.Minute

// ScheduledChangeEventType is the AWS Health event type SendScheduledChange
// reports.
const ScheduledChangeEventType = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"

// SetInsufficientCapacity turns a capacity pool's shortage on or off:
// CreateFleet then reports its overrides with InsufficientInstanceCapacity.
// capacityType is "spot" or "on-demand".
func (s *Server) SetInsufficientCapacity(instanceType, zone, capacityType string, on bool) {
	s.ec2.SetInsufficientCapacity(instanceType, zone, capacityType, on)
}

// SetFleetError makes CreateFleet report a capacity pool's overrides with an
// error code in its errorSet, with EC2's message, instead of launching from
// it: MaxSpotInstanceCountExceeded, VcpuLimitExceeded,
// MaxFleetCountExceeded, UnfulfillableCapacity or UnauthorizedOperation
// (see ec2.Service.SetFleetError); "" clears it. capacityType is "spot" or
// "on-demand".
func (s *Server) SetFleetError(instanceType, zone, capacityType, code string) error {
	if err := s.ec2.SetFleetError(instanceType, zone, capacityType, code); err != nil {
		return fmt.Errorf("setting a CreateFleet fault: %w", err)
	}
	return nil
}

// AddCapacityReservation seeds an On-Demand Capacity Reservation or a
// Capacity Block in the account (see ec2.CapacityReservation for the
// defaults). DescribeCapacityReservations lists it; CreateFleet launches
// into it only through a launch template that targets it, one slot per
// instance, and reports ReservationCapacityExceeded once it is full;
// terminating an instance gives its slot back.
func (s *Server) AddCapacityReservation(cr ec2.CapacityReservation) (ec2.CapacityReservation, error) {
	out, err := s.ec2.AddCapacityReservation(cr)
	if err != nil {
		return out, fmt.Errorf("seeding capacity reservation: %w", err)
	}
	return out, nil
}

// SetThrottle makes that fraction (0 to 1) of one service's requests fail,
// right after authentication, with the throttling error that service
// answers: EC2 RequestLimitExceeded (HTTP 503), IAM Throttling (HTTP 400),
// SSM ThrottlingException (HTTP 400), Pricing ThrottlingException (HTTP
// 429), SQS RequestThrottled (HTTP 403, as its model declares it) and EKS
// ThrottlingException (HTTP 429); aws-sdk-go-v2's retryer counts each code
// as a throttle. service is one of ServiceEC2, ServiceIAM, ServiceSSM,
// ServicePricing, ServiceSQS and ServiceEKS; 0 turns throttling off.
func (s *Server) SetThrottle(service string, rate float64) error {
	switch service {
	case ServiceEC2:
		s.ec2.SetThrottle(rate)
	case ServiceIAM:
		s.iam.SetThrottle(rate)
	case ServiceSSM:
		s.ssm.SetThrottle(rate)
	case ServicePricing:
		s.pricing.SetThrottle(rate)
	case ServiceSQS:
		s.sqs.SetThrottle(rate)
	case ServiceEKS:
		s.eks.SetThrottle(rate)
	default:
		return fmt.Errorf("throttling service %q: the local AWS endpoint serves ec2, iam, ssm, pricing, sqs and eks", service)
	}
	return nil
}

// SetDescribeLag hides instances from DescribeInstances for d after their
// launch (EC2's eventual consistency); 0 turns it off.
func (s *Server) SetDescribeLag(d time.Duration) { s.ec2.SetDescribeLag(d) }

// StopInstance stops an instance behind the client's back.
func (s *Server) StopInstance(id string) error {
	if err := s.ec2.StopInstance(id); err != nil {
		return fmt.Errorf("stopping instance %s behind the client's back: %w", id, err)
	}
	return nil
}

// TerminateInstance terminates an instance behind the client's back.
func (s *Server) TerminateInstance(id string) error {
	if err := s.ec2.TerminateInstance(id); err != nil {
		return fmt.Errorf("terminating instance %s behind the client's back: %w", id, err)
	}
	return nil
}

// envelope is the EventBridge envelope of a new event, stamped by the clock.
func (s *Server) envelope() sqs.Envelope {
	s.mu.Lock()
	s.eventID++
	n := s.eventID
	s.mu.Unlock()
	return sqs.Envelope{
		ID:      fmt.Sprintf("%08x-0000-4000-8000-%012x", s.cfg.Seed&0xffffffff, n),
		Account: s.ec2.AccountID(), Region: s.cfg.Region, Time: s.cfg.Clock.Now(),
	}
}

// sendEvent puts an EventBridge event body on the interruption queue.
func (s *Server) sendEvent(kind, body string) error {
	if _, err := s.sqs.Send(s.cfg.InterruptionQueue, body); err != nil {
		return fmt.Errorf("sending %s to the interruption queue %s: %w", kind, s.cfg.InterruptionQueue, err)
	}
	s.cfg.Logger.V(1).Info("sent interruption event", "kind", kind, "queue", s.cfg.InterruptionQueue)
	return nil
}

// checkInstance fails unless the instance is known to EC2.
func (s *Server) checkInstance(id string) error {
	if _, ok := s.ec2.Instance(id); !ok {
		return fmt.Errorf("instance %s does not exist", id)
	}
	return nil
}

// SendSpotInterruption puts an "EC2 Spot Instance Interruption Warning"
// (action terminate) for the instance on the interruption queue, and
// terminates the instance SpotReclaimDelay later by the endpoint's clock, as
// EC2 reclaims it. The reclaim is dropped when the server stops first.
func (s *Server) SendSpotInterruption(instanceID string) error {
	if err := s.checkInstance(instanceID); err != nil {
		return fmt.Errorf("sending a spot interruption warning: %w", err)
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("sending a spot interruption warning for %s: the endpoint is stopped", instanceID)
	}
	if err := s.sendEvent("spot interruption warning", sqs.SpotInterruptionWarning(s.envelope(), instanceID, "terminate")); err != nil {
		return err
	}
	timer := s.cfg.Clock.NewTimer(SpotReclaimDelay)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer timer.Stop()
		select {
		case <-s.ctx.Done():
		case <-timer.C():
			if err := s.ec2.TerminateInstance(instanceID); err != nil {
				s.cfg.Logger.Error(err, "reclaiming a spot instance", "instance", instanceID)
				return
			}
			s.cfg.Logger.Info("reclaimed spot instance after its interruption warning", "instance", instanceID)
		}
	}()
	return nil
}

// SendRebalanceRecommendation puts an "EC2 Instance Rebalance
// Recommendation" for the instance on the interruption queue.
func (s *Server) SendRebalanceRecommendation(instanceID string) error {
	if err := s.checkInstance(instanceID); err != nil {
		return fmt.Errorf("sending a rebalance recommendation: %w", err)
	}
	return s.sendEvent("rebalance recommendation", sqs.RebalanceRecommendation(s.envelope(), instanceID))
}

// SendScheduledChange puts an AWS Health scheduled-change event (instance
// retirement, starting in 14 days) for the instances on the interruption
// queue.
func (s *Server) SendScheduledChange(instanceIDs ...string) error {
	if len(instanceIDs) == 0 {
		return fmt.Errorf("sending a scheduled change: no instance given")
	}
	for _, id := range instanceIDs {
		if err := s.checkInstance(id); err != nil {
			return fmt.Errorf("sending a scheduled change: %w", err)
		}
	}
	e := s.envelope()
	start := e.Time.Add(14 * 24 * time.Hour)
	body := sqs.HealthScheduledChange(e, sqs.ScheduledChange{
		EventTypeCode: ScheduledChangeEventType, Start: start, End: start.Add(7 * 24 * time.Hour),
		Description: "EC2 has detected degradation of the underlying hardware hosting your Amazon EC2 instance. " +
			"The instance is scheduled for retirement.",
		InstanceIDs: instanceIDs,
	})
	return s.sendEvent("scheduled change", body)
}

// SendStateChange puts an "EC2 Instance State-change Notification" for the
// instance on the interruption queue; state is pending, running, stopping,
// stopped, shutting-down or terminated. It does not change the instance.
func (s *Server) SendStateChange(instanceID, state string) error {
	switch state {
	case "pending", "running", "stopping", "stopped", "shutting-down", "terminated":
	default:
		return fmt.Errorf("sending a state-change notification for %s: unknown state %q", instanceID, state)
	}
	return s.sendEvent("state-change notification", sqs.InstanceStateChange(s.envelope(), instanceID, state))
}

// SendCapacityReservationInterruption puts an "EC2 Capacity Reservation
// Instance Interruption Warning" for the instance on the interruption queue,
// with termination SpotReclaimDelay from now. It does not reclaim the
// instance.
func (s *Server) SendCapacityReservationInterruption(instanceID string) error {
	inst, ok := s.ec2.Instance(instanceID)
	if !ok {
		return fmt.Errorf("sending a capacity reservation interruption warning: instance %s does not exist", instanceID)
	}
	e := s.envelope()
	return s.sendEvent("capacity reservation interruption warning",
		sqs.CapacityReservationInterruptionWarning(e, instanceID, inst.ZoneID, e.Time.Add(SpotReclaimDelay)))
}
