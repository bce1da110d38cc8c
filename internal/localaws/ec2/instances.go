package ec2

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// InstanceState is an EC2 instance state name.
type InstanceState string

// The instance states modelled, with EC2's state codes (stateCodes).
const (
	StatePending      InstanceState = "pending"
	StateRunning      InstanceState = "running"
	StateShuttingDown InstanceState = "shutting-down"
	StateTerminated   InstanceState = "terminated"
	StateStopping     InstanceState = "stopping"
	StateStopped      InstanceState = "stopped"
)

// stateCodes are EC2's numeric instance state codes.
var stateCodes = map[InstanceState]int{
	StatePending: 0, StateRunning: 16, StateShuttingDown: 32,
	StateTerminated: 48, StateStopping: 64, StateStopped: 80,
}

// Capacity types of an instance.
const (
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeSpot     = "spot"
)

// Instance is a snapshot of one EC2 instance.
type Instance struct {
	// ID is e.g. i-0123456789abcdef0.
	ID string
	// InstanceType is e.g. m5.large.
	InstanceType string
	// Zone and ZoneID are the instance's availability zone.
	Zone, ZoneID string
	// SubnetID and VPCID are the instance's network.
	SubnetID, VPCID string
	// ImageID is the AMI the instance launched from.
	ImageID string
	// Architecture is x86_64 or arm64, from the instance type.
	Architecture string
	// State is the current state.
	State InstanceState
	// StateReason is EC2's state reason code, e.g.
	// Client.UserInitiatedShutdown; empty while pending or running.
	StateReason string
	// StateChangeTime is when the state last changed, by the clock.
	StateChangeTime time.Time
	// LaunchTime is when the instance was launched, by the clock.
	LaunchTime time.Time
	// CapacityType is CapacityTypeOnDemand or CapacityTypeSpot.
	CapacityType string
	// CapacityReservationID is the capacity reservation the instance was
	// launched into, "" for none.
	CapacityReservationID string
	// SpotInstanceRequestID is the sir- id of spot instances.
	SpotInstanceRequestID string
	// Tenancy is default or dedicated.
	Tenancy string
	// PrivateIP is the primary private IPv4 address, from the subnet.
	PrivateIP string
	// PrivateDNSName is e.g. ip-10-0-1-4.ec2.internal.
	PrivateDNSName string
	// Tags are the instance's tags.
	Tags map[string]string
	// UserData is the decoded user data of the launch template.
	UserData []byte
	// LaunchTemplateID, LaunchTemplateName and LaunchTemplateVersion name
	// the launch template used.
	LaunchTemplateID, LaunchTemplateName, LaunchTemplateVersion string
	// SecurityGroupIDs are the instance's security groups.
	SecurityGroupIDs []string
	// IAMInstanceProfile is the instance profile name (or ARN) of the
	// launch template; empty for none.
	IAMInstanceProfile string
	// InterfaceTypes are the types of the instance's network interfaces
	// (interface, efa, efa-only), by device.
	InterfaceTypes []string
	// FleetID and ReservationID are the CreateFleet call that launched the
	// instance and its reservation.
	FleetID, ReservationID string
}

// instance is an Instance in the state.
type instance struct {
	Instance
}

// public deep-copies an instance out of the state.
func (in *instance) public() Instance {
	out := in.Instance
	out.Tags = cloneTags(in.Tags)
	out.UserData = slices.Clone(in.UserData)
	out.SecurityGroupIDs = slices.Clone(in.SecurityGroupIDs)
	out.InterfaceTypes = slices.Clone(in.InterfaceTypes)
	return out
}

// Instances returns a snapshot of every instance still described (not yet
// vanished after termination), in launch order.
func (s *Service) Instances() []Instance {
	s.mu.Lock()
	s.advanceLocked()
	out := make([]Instance, len(s.st.insts))
	for i, in := range s.st.insts {
		out[i] = in.public()
	}
	s.mu.Unlock()
	s.notify()
	return out
}

// Instance returns one instance by id.
func (s *Service) Instance(id string) (Instance, bool) {
	s.mu.Lock()
	s.advanceLocked()
	in, ok := s.st.byID[id]
	var out Instance
	if ok {
		out = in.public()
	}
	s.mu.Unlock()
	s.notify()
	return out, ok
}

// listener is one OnInstanceChange subscription.
type listener struct {
	id int
	f  func(Instance)
}

// OnInstanceChange registers f to be called with a snapshot of an instance
// after each of its state changes (including the launch, as pending) and tag
// changes, in order. Calls happen on the goroutine that made the change (an
// HTTP request, Advance, Run or a fault control), after the state lock is
// released, one at a time; f may call the Service. The returned function
// unsubscribes.
func (s *Service) OnInstanceChange(f func(Instance)) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.nextListener++
	id := s.st.nextListener
	s.st.listeners = append(s.st.listeners, listener{id: id, f: f})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.st.listeners = slices.DeleteFunc(s.st.listeners, func(l listener) bool { return l.id == id })
	}
}

// emitLocked queues a change of in for the listeners.
func (s *Service) emitLocked(in *instance) {
	if len(s.st.listeners) > 0 {
		s.st.events = append(s.st.events, in.public())
	}
}

// notify delivers queued changes. One goroutine drains at a time, so that
// listeners see changes in order; a listener that changes the state queues
// more, which the same loop delivers.
func (s *Service) notify() {
	s.mu.Lock()
	if s.st.draining {
		s.mu.Unlock()
		return
	}
	s.st.draining = true
	for len(s.st.events) > 0 {
		ev := s.st.events[0]
		s.st.events = s.st.events[1:]
		ls := slices.Clone(s.st.listeners)
		s.mu.Unlock()
		for _, l := range ls {
			l.f(ev)
		}
		s.mu.Lock()
	}
	s.st.draining = false
	s.mu.Unlock()
}

// setStateLocked moves an instance to a state at a time and queues the change.
func (s *Service) setStateLocked(in *instance, st InstanceState, reason string, at time.Time) {
	// Leaving for shutting-down or terminated gives a reservation slot back,
	// once.
	if (st == StateShuttingDown || st == StateTerminated) && in.State != StateShuttingDown && in.State != StateTerminated {
		s.releaseReservationLocked(in)
	}
	in.State, in.StateChangeTime = st, at
	if reason != "" || st == StatePending || st == StateRunning {
		in.StateReason = reason
	}
	if st == StateTerminated {
		if sn := s.subnetLocked(in.SubnetID); sn != nil {
			sn.release(in.PrivateIP)
		}
	}
	s.emitLocked(in)
}

// advanceLocked applies every transition whose delay has passed, each at
// the time it became due, and forgets instances terminated longer than
// TerminatedRetention ago.
func (s *Service) advanceLocked() {
	now := s.now()
	var keep []*instance
	for _, in := range s.st.insts {
		for {
			var next InstanceState
			var delay time.Duration
			switch in.State {
			case StatePending:
				next, delay = StateRunning, s.cfg.PendingDelay
			case StateStopping:
				next, delay = StateStopped, s.cfg.StoppingDelay
			case StateShuttingDown:
				next, delay = StateTerminated, s.cfg.ShuttingDownDelay
			}
			due := in.StateChangeTime.Add(delay)
			if next == "" || due.After(now) {
				break
			}
			s.setStateLocked(in, next, "", due)
		}
		if in.State == StateTerminated && !in.StateChangeTime.Add(s.cfg.TerminatedRetention).After(now) {
			delete(s.st.byID, in.ID)
			continue
		}
		keep = append(keep, in)
	}
	s.st.insts = keep
}

// instanceIDPattern is the form of an instance id.
var instanceIDPattern = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// lookupInstancesLocked resolves InstanceId.N as EC2 does: a malformed id
// fails first, then every unknown id is named in one NotFound. hidden
// reports instances not yet visible (describe lag).
func (s *Service) lookupInstancesLocked(ids []string, hidden func(*instance) bool) ([]*instance, error) {
	var out []*instance
	var missing []string
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return nil, apiErrorf(400, "InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		in, ok := s.st.byID[id]
		if !ok || (hidden != nil && hidden(in)) {
			missing = append(missing, id)
			continue
		}
		if !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	switch len(missing) {
	case 0:
		return out, nil
	case 1:
		return nil, apiErrorf(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", missing[0])
	default:
		return nil, apiErrorf(400, "InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
}

// hiddenLocked tells whether an instance is still invisible to Describe
// calls because of the configured describe lag.
func (s *Service) hiddenLocked(in *instance) bool {
	return s.st.describeLag > 0 && s.now().Before(in.LaunchTime.Add(s.st.describeLag))
}

// instanceFilters are the DescribeInstances filters modelled.
var instanceFilters = fieldFuncs[*instance]{
	"instance-id":              func(i *instance) []string { return one(i.ID) },
	"instance-state-name":      func(i *instance) []string { return one(string(i.State)) },
	"instance-state-code":      func(i *instance) []string { return one(strconv.Itoa(stateCodes[i.State])) },
	"instance-type":            func(i *instance) []string { return one(i.InstanceType) },
	"availability-zone":        func(i *instance) []string { return one(i.Zone) },
	"subnet-id":                func(i *instance) []string { return one(i.SubnetID) },
	"vpc-id":                   func(i *instance) []string { return one(i.VPCID) },
	"image-id":                 func(i *instance) []string { return one(i.ImageID) },
	"architecture":             func(i *instance) []string { return one(i.Architecture) },
	"private-ip-address":       func(i *instance) []string { return one(i.PrivateIP) },
	"private-dns-name":         func(i *instance) []string { return one(i.PrivateDNSName) },
	"reservation-id":           func(i *instance) []string { return one(i.ReservationID) },
	"spot-instance-request-id": func(i *instance) []string { return one(i.SpotInstanceRequestID) },
	"tenancy":                  func(i *instance) []string { return one(i.Tenancy) },
	"launch-time":              func(i *instance) []string { return one(timestamp(i.LaunchTime)) },
	"instance-lifecycle": func(i *instance) []string {
		if i.CapacityType == CapacityTypeSpot {
			return one("spot")
		}
		return nil
	},
	"instance.group-id": func(i *instance) []string { return i.SecurityGroupIDs },
}

// describeInstances serves DescribeInstances.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html
func (s *Service) describeInstances(p params) (response, error) {
	ids, err := p.strings("InstanceId")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, instanceFilters, true)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeInstances", 5, 1000)
	if err != nil {
		return nil, err
	}
	if pr.limit && len(ids) > 0 {
		return nil, apiErrorf(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	var found []*instance
	if len(ids) > 0 {
		if found, err = s.lookupInstancesLocked(ids, s.hiddenLocked); err != nil {
			return nil, err
		}
	} else {
		for _, in := range s.st.insts {
			if !s.hiddenLocked(in) {
				found = append(found, in)
			}
		}
	}
	var sel []*instance
	for _, in := range found {
		if matches(in, fs, instanceFilters, in.Tags) {
			sel = append(sel, in)
		}
	}
	start, end, next := s.window(pr, "DescribeInstances", len(sel))
	out := &describeInstancesResponse{NextToken: next}
	for _, in := range sel[start:end] {
		n := len(out.Reservations)
		if n == 0 || out.Reservations[n-1].ReservationID != in.ReservationID {
			out.Reservations = append(out.Reservations, reservationXML{ReservationID: in.ReservationID, OwnerID: s.cfg.AccountID})
			n++
		}
		r := &out.Reservations[n-1]
		x := s.instanceXMLLocked(in)
		x.AmiLaunchIndex = len(r.Instances)
		r.Instances = append(r.Instances, x)
	}
	return out, nil
}

// instanceStateChangeXML is one <item> of TerminateInstances' instancesSet.
type instanceStateChangeXML struct {
	InstanceID    string   `xml:"instanceId"`
	CurrentState  stateXML `xml:"currentState"`
	PreviousState stateXML `xml:"previousState"`
}

// terminateInstancesResponse is TerminateInstances' result.
type terminateInstancesResponse struct {
	meta
	Instances []instanceStateChangeXML `xml:"instancesSet>item"`
}

// terminateInstances serves TerminateInstances: every named instance moves
// to shutting-down (terminated ones stay terminated); an unknown id fails
// the whole call.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_TerminateInstances.html
func (s *Service) terminateInstances(p params) (response, error) {
	ids, err := p.strings("InstanceId")
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errMissing("InstanceId")
	}
	found, err := s.lookupInstancesLocked(ids, nil)
	if err != nil {
		return nil, err
	}
	out := &terminateInstancesResponse{}
	for _, in := range found {
		prev := in.State
		s.terminateLocked(in, "Client.UserInitiatedShutdown")
		out.Instances = append(out.Instances, instanceStateChangeXML{
			InstanceID:    in.ID,
			CurrentState:  stateXML{Code: stateCodes[in.State], Name: string(in.State)},
			PreviousState: stateXML{Code: stateCodes[prev], Name: string(prev)},
		})
	}
	return out, nil
}

// terminateLocked starts shutting an instance down unless it already is.
func (s *Service) terminateLocked(in *instance, reason string) {
	if in.State == StateShuttingDown || in.State == StateTerminated {
		return
	}
	s.setStateLocked(in, StateShuttingDown, reason, s.now())
}

// createTagsResponse is CreateTags' result.
type createTagsResponse struct {
	meta
	Return bool `xml:"return"`
}

// createTags serves CreateTags for instances, launch templates, subnets,
// security groups, AMIs and VPCs. Every resource is checked before any is
// tagged.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateTags.html
func (s *Service) createTags(p params) (response, error) {
	ids, err := p.strings("ResourceId")
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errMissing("ResourceId")
	}
	tags, err := p.tags("Tag")
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, errMissing("Tag")
	}
	if err := validateTags(tags); err != nil {
		return nil, err
	}
	var targets []*map[string]string
	var changed []*instance
	for _, id := range ids {
		prefix, _, _ := strings.Cut(id, "-")
		var m *map[string]string
		var notFound string
		switch prefix {
		case "i":
			found, err := s.lookupInstancesLocked([]string{id}, nil)
			if err != nil {
				return nil, err
			}
			m = &found[0].Tags
			changed = append(changed, found[0])
		case "lt":
			if lt := s.templateByIDLocked(id); lt != nil {
				m = &lt.Tags
			}
			notFound = "InvalidLaunchTemplateId.NotFound"
		case "subnet":
			if sn := s.subnetLocked(id); sn != nil {
				m = &sn.Tags
			}
			notFound = "InvalidSubnetID.NotFound"
		case "sg":
			if g := s.groupLocked(id); g != nil {
				m = &g.Tags
			}
			notFound = "InvalidGroup.NotFound"
		case "ami":
			if img := s.imageLocked(id); img != nil {
				m = &img.Tags
			}
			notFound = "InvalidAMIID.NotFound"
		case "vpc":
			if v := s.vpcLocked(id); v != nil {
				m = &v.Tags
			}
			notFound = "InvalidVpcID.NotFound"
		default:
			return nil, apiErrorf(400, "InvalidID", "The ID '%s' is not valid", id)
		}
		if m == nil {
			return nil, apiErrorf(400, notFound, "The ID '%s' does not exist", id)
		}
		merged := cloneTags(*m)
		if merged == nil {
			merged = map[string]string{}
		}
		for _, t := range tags {
			merged[t.Key] = t.Value
		}
		if len(merged) > maxTagsPerResource {
			return nil, apiErrorf(400, "TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
		}
		targets = append(targets, m)
	}
	for _, m := range targets {
		if *m == nil {
			*m = map[string]string{}
		}
		for _, t := range tags {
			(*m)[t.Key] = t.Value
		}
	}
	for _, in := range changed {
		s.emitLocked(in)
	}
	return &createTagsResponse{Return: true}, nil
}
