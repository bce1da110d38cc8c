package ec2

import (
	"fmt"
	"slices"
	"time"
)

// Capacity reservation types, as DescribeCapacityReservations reports them.
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
)

// CapacityReservation is an On-Demand Capacity Reservation or a Capacity
// Block: instances of one type in one zone that launches targeting it may
// use, up to its count.
type CapacityReservation struct {
	// ID is e.g. cr-0123456789abcdef0; AddCapacityReservation makes one
	// when empty.
	ID string
	// OwnerID is the owning account; default the service's account.
	OwnerID string
	// InstanceType and Zone are what the reservation holds capacity for.
	InstanceType, Zone string
	// TotalInstanceCount is the reservation's size.
	TotalInstanceCount int
	// AvailableInstanceCount is how many more instances it takes; launches
	// into it decrement it and their termination increments it again.
	AvailableInstanceCount int
	// InstanceMatchCriteria is open (default) or targeted.
	InstanceMatchCriteria string
	// ReservationType is ReservationTypeDefault (default) or
	// ReservationTypeCapacityBlock.
	ReservationType string
	// State is active (default), expired, cancelled, pending or failed.
	State string
	// EndDate is when the reservation ends; zero for unlimited.
	EndDate time.Time
	// Tags are the reservation's tags.
	Tags map[string]string
}

// AddCapacityReservation seeds a capacity reservation, filling in the
// defaults, and returns it. The instance type must exist and the zone must
// be one of the service's.
func (s *Service) AddCapacityReservation(cr CapacityReservation) (CapacityReservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := types().byName[cr.InstanceType]; !ok {
		return CapacityReservation{}, fmt.Errorf("adding capacity reservation: unknown instance type %q", cr.InstanceType)
	}
	if !s.zoneKnownLocked(cr.Zone) {
		return CapacityReservation{}, fmt.Errorf("adding capacity reservation: unknown zone %q", cr.Zone)
	}
	if cr.ID == "" {
		cr.ID = s.newIDLocked("cr")
	}
	if s.reservationLocked(cr.ID) != nil {
		return CapacityReservation{}, fmt.Errorf("adding capacity reservation: %s exists", cr.ID)
	}
	if cr.OwnerID == "" {
		cr.OwnerID = s.cfg.AccountID
	}
	if cr.InstanceMatchCriteria == "" {
		cr.InstanceMatchCriteria = "open"
	}
	if cr.ReservationType == "" {
		cr.ReservationType = ReservationTypeDefault
	}
	if cr.State == "" {
		cr.State = "active"
	}
	if cr.TotalInstanceCount < cr.AvailableInstanceCount {
		cr.TotalInstanceCount = cr.AvailableInstanceCount
	}
	cr.Tags = cloneTags(cr.Tags)
	stored := cr
	s.st.reservations = append(s.st.reservations, &stored)
	return stored.public(), nil
}

// SetCapacityReservationAvailable sets how many more instances a
// reservation takes, as launches by other clients (or a resize) would,
// behind the provider's back. n is capped at the total count.
func (s *Service) SetCapacityReservationAvailable(id string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr := s.reservationLocked(id)
	if cr == nil {
		return fmt.Errorf("setting capacity reservation %s: not found", id)
	}
	cr.AvailableInstanceCount = min(max(n, 0), cr.TotalInstanceCount)
	return nil
}

// CapacityReservations returns a snapshot of the seeded reservations, in
// the order they were added.
func (s *Service) CapacityReservations() []CapacityReservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CapacityReservation, len(s.st.reservations))
	for i, cr := range s.st.reservations {
		out[i] = cr.public()
	}
	return out
}

func (cr *CapacityReservation) public() CapacityReservation {
	out := *cr
	out.Tags = cloneTags(cr.Tags)
	return out
}

func (s *Service) reservationLocked(id string) *CapacityReservation {
	for _, cr := range s.st.reservations {
		if cr.ID == id {
			return cr
		}
	}
	return nil
}

// zoneKnownLocked tells whether a zone is one of the service's.
func (s *Service) zoneKnownLocked(zone string) bool {
	return slices.ContainsFunc(s.zonesLocked(), func(z Zone) bool { return z.Name == zone })
}

// capacityReservationXML is one <item> of DescribeCapacityReservations'
// capacityReservationSet (element names as the SDK's deserializer reads them).
type capacityReservationXML struct {
	CapacityReservationID  string  `xml:"capacityReservationId"`
	OwnerID                string  `xml:"ownerId"`
	CapacityReservationArn string  `xml:"capacityReservationArn"`
	AvailabilityZoneID     string  `xml:"availabilityZoneId"`
	InstanceType           string  `xml:"instanceType"`
	InstancePlatform       string  `xml:"instancePlatform"`
	AvailabilityZone       string  `xml:"availabilityZone"`
	Tenancy                string  `xml:"tenancy"`
	TotalInstanceCount     int     `xml:"totalInstanceCount"`
	AvailableInstanceCount int     `xml:"availableInstanceCount"`
	EbsOptimized           bool    `xml:"ebsOptimized"`
	EphemeralStorage       bool    `xml:"ephemeralStorage"`
	State                  string  `xml:"state"`
	StartDate              string  `xml:"startDate,omitempty"`
	EndDate                string  `xml:"endDate,omitempty"`
	EndDateType            string  `xml:"endDateType"`
	InstanceMatchCriteria  string  `xml:"instanceMatchCriteria"`
	CreateDate             string  `xml:"createDate"`
	ReservationType        string  `xml:"reservationType"`
	TagSet                 *tagSet `xml:"tagSet,omitempty"`
}

// describeCapacityReservationsResponse is DescribeCapacityReservations' result.
type describeCapacityReservationsResponse struct {
	meta
	CapacityReservations []capacityReservationXML `xml:"capacityReservationSet>item"`
	NextToken            string                   `xml:"nextToken,omitempty"`
}

// reservationFilters are the DescribeCapacityReservations filters modelled.
var reservationFilters = fieldFuncs[*CapacityReservation]{
	"instance-type":           func(cr *CapacityReservation) []string { return one(cr.InstanceType) },
	"owner-id":                func(cr *CapacityReservation) []string { return one(cr.OwnerID) },
	"availability-zone":       func(cr *CapacityReservation) []string { return one(cr.Zone) },
	"instance-platform":       func(*CapacityReservation) []string { return one("Linux/UNIX") },
	"tenancy":                 func(*CapacityReservation) []string { return one("default") },
	"state":                   func(cr *CapacityReservation) []string { return one(cr.State) },
	"instance-match-criteria": func(cr *CapacityReservation) []string { return one(cr.InstanceMatchCriteria) },
	"end-date-type":           func(cr *CapacityReservation) []string { return one(endDateType(cr)) },
}

func endDateType(cr *CapacityReservation) string {
	if cr.EndDate.IsZero() {
		return "unlimited"
	}
	return "limited"
}

// describeCapacityReservations serves DescribeCapacityReservations:
// CapacityReservationId.N, Filter.N (including tag filters), MaxResults
// (1-1000) and NextToken.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservations.html
func (s *Service) describeCapacityReservations(p params) (response, error) {
	ids, err := p.strings("CapacityReservationId")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, reservationFilters, true)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeCapacityReservations", 1, 1000)
	if err != nil {
		return nil, err
	}
	found := s.st.reservations
	if len(ids) > 0 {
		found = nil
		for _, id := range ids {
			cr := s.reservationLocked(id)
			if cr == nil {
				return nil, apiErrorf(400, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
			}
			found = append(found, cr)
		}
	}
	var sel []*CapacityReservation
	for _, cr := range found {
		if matches(cr, fs, reservationFilters, cr.Tags) {
			sel = append(sel, cr)
		}
	}
	start, end, next := s.window(pr, "DescribeCapacityReservations", len(sel))
	out := &describeCapacityReservationsResponse{NextToken: next, CapacityReservations: []capacityReservationXML{}}
	for _, cr := range sel[start:end] {
		x := capacityReservationXML{
			CapacityReservationID:  cr.ID,
			OwnerID:                cr.OwnerID,
			CapacityReservationArn: fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", s.cfg.Region, cr.OwnerID, cr.ID),
			AvailabilityZoneID:     s.zoneIDLocked(cr.Zone),
			InstanceType:           cr.InstanceType,
			InstancePlatform:       "Linux/UNIX",
			AvailabilityZone:       cr.Zone,
			Tenancy:                "default",
			TotalInstanceCount:     cr.TotalInstanceCount,
			AvailableInstanceCount: cr.AvailableInstanceCount,
			EbsOptimized:           true,
			State:                  cr.State,
			EndDateType:            endDateType(cr),
			InstanceMatchCriteria:  cr.InstanceMatchCriteria,
			CreateDate:             timestamp(time.Unix(0, 0)),
			ReservationType:        cr.ReservationType,
			TagSet:                 toTagSet(cr.Tags),
		}
		if !cr.EndDate.IsZero() {
			x.EndDate = timestamp(cr.EndDate)
		}
		out.CapacityReservations = append(out.CapacityReservations, x)
	}
	return out, nil
}

// targetedReservation returns the reservation a launch template targets
// (CapacityReservationSpecification.CapacityReservationTarget), "" for none.
func targetedReservation(lt *launchTemplate) string {
	return lt.Data.Params["CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"]
}

// openReservationLocked returns the open reservation an on-demand launch of
// the candidate runs in, or nil: EC2 puts a matching launch (instance type,
// zone, default tenancy) into an active open On-Demand Capacity Reservation
// with a free slot unless the launch template's
// CapacityReservationPreference is "none" (or capacity-reservations-only,
// which targets one). Capacity Blocks are never open.
func (s *Service) openReservationLocked(c *override, tenancy, preference string) *CapacityReservation {
	if preference != "" && preference != "open" || tenancy != "default" {
		return nil
	}
	for _, cr := range s.st.reservations {
		if cr.InstanceMatchCriteria == "open" && cr.ReservationType == ReservationTypeDefault && cr.State == "active" &&
			cr.InstanceType == c.typ && cr.Zone == c.zone && cr.AvailableInstanceCount > 0 {
			return cr
		}
	}
	return nil
}

// reservationUnavailableLocked tells why a candidate of a launch template
// that targets reservation id cannot launch into it; "" when it can. EC2
// launches into a targeted reservation only instances of its type in its
// zone, while it is active and has an available slot.
func (s *Service) reservationUnavailableLocked(c *override, id string) (string, string) {
	cr := s.reservationLocked(id)
	switch {
	case cr == nil:
		return "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
	case cr.State != "active":
		return "InvalidCapacityReservationId.Unavailable", fmt.Sprintf("The capacity reservation '%s' is %s.", id, cr.State)
	case cr.InstanceType != c.typ || cr.Zone != c.zone:
		return "InvalidParameterCombination", fmt.Sprintf("The instance type %s in %s does not match the capacity reservation '%s' (%s in %s).", c.typ, c.zone, id, cr.InstanceType, cr.Zone)
	case cr.AvailableInstanceCount <= 0:
		return "ReservationCapacityExceeded", fmt.Sprintf("The requested number of instances exceeds the available capacity of Capacity Reservation '%s'.", id)
	}
	return "", ""
}

// releaseReservationLocked gives an instance's slot back to its
// reservation; setStateLocked calls it once, as the instance leaves for
// shutting-down or terminated.
func (s *Service) releaseReservationLocked(in *instance) {
	if in.CapacityReservationID == "" {
		return
	}
	if cr := s.reservationLocked(in.CapacityReservationID); cr != nil {
		cr.AvailableInstanceCount = min(cr.AvailableInstanceCount+1, cr.TotalInstanceCount)
	}
}
