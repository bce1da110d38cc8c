package ec2

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// override is one candidate of a CreateFleet request: a launch template
// config's override, resolved.
type override struct {
	lt       *launchTemplate
	spec     ltSpecXML
	typ      string
	zone     string
	subnetID string
	imageID  string
	priority *float64
	price    float64
	priced   bool
	ordinal  int
}

// ltSpecXML is a launchTemplateSpecification element.
type ltSpecXML struct {
	LaunchTemplateID   string `xml:"launchTemplateId,omitempty"`
	LaunchTemplateName string `xml:"launchTemplateName,omitempty"`
	Version            string `xml:"version,omitempty"`
}

// overridesXML is an overrides element.
type overridesXML struct {
	InstanceType     string `xml:"instanceType,omitempty"`
	AvailabilityZone string `xml:"availabilityZone,omitempty"`
	SubnetID         string `xml:"subnetId,omitempty"`
	ImageID          string `xml:"imageId,omitempty"`
	Priority         string `xml:"priority,omitempty"`
}

// ltAndOverridesXML is a launchTemplateAndOverrides element.
type ltAndOverridesXML struct {
	LaunchTemplateSpecification ltSpecXML    `xml:"launchTemplateSpecification"`
	Overrides                   overridesXML `xml:"overrides"`
}

// fleetErrorXML is one <item> of CreateFleet's errorSet.
type fleetErrorXML struct {
	LaunchTemplateAndOverrides ltAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	ErrorCode                  string            `xml:"errorCode"`
	ErrorMessage               string            `xml:"errorMessage"`
}

// fleetInstanceXML is one <item> of CreateFleet's fleetInstanceSet.
type fleetInstanceXML struct {
	LaunchTemplateAndOverrides ltAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	InstanceIDs                items             `xml:"instanceIds"`
	InstanceType               string            `xml:"instanceType"`
}

// createFleetResponse is CreateFleet's result.
type createFleetResponse struct {
	meta
	FleetID   string             `xml:"fleetId"`
	Errors    []fleetErrorXML    `xml:"errorSet>item"`
	Instances []fleetInstanceXML `xml:"fleetInstanceSet>item"`
}

// xml renders the launchTemplateAndOverrides of a candidate.
func (o *override) xml() ltAndOverridesXML {
	x := ltAndOverridesXML{
		LaunchTemplateSpecification: o.spec,
		Overrides:                   overridesXML{InstanceType: o.typ, AvailabilityZone: o.zone, SubnetID: o.subnetID, ImageID: o.imageID},
	}
	if o.priority != nil {
		x.Overrides.Priority = strconv.FormatFloat(*o.priority, 'f', -1, 64)
	}
	return x
}

// allocation strategies, by capacity type; the first is the default.
var strategies = map[string][]string{
	CapacityTypeOnDemand: {"lowest-price", "prioritized"},
	CapacityTypeSpot:     {"lowest-price", "price-capacity-optimized", "capacity-optimized", "capacity-optimized-prioritized", "diversified"},
}

// fleetToken is what a CreateFleet ClientToken was first used with.
type fleetToken struct {
	// request is the request's parameters but the token, canonical.
	request string
	answer  *createFleetResponse
}

// maxClientToken is EC2's limit on a client token: 64 ASCII characters.
const maxClientToken = 64

// createFleet serves CreateFleet for Type=instant: it resolves every
// override of every launch template config, orders them by the allocation
// strategy, skips pools that fail (insufficient capacity, no address, bad
// AMI), and launches TotalTargetCapacity instances from the first pool that
// works.
//
// A ClientToken makes the request idempotent, as EC2 documents it: a request
// that repeats a token and every other parameter gets the first answer
// again (same fleet, same instances, same errors) and launches nothing; one
// that repeats a token with other parameters gets
// IdempotentParameterMismatch. Only answered requests record their token
// (an error answer does not), and tokens are kept for the endpoint's life
// (EC2 keeps them at least 24 hours after the instances terminate).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFleet.html
// https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html
func (s *Service) createFleet(p params) (response, error) {
	token := p.get("ClientToken")
	if len(token) > maxClientToken || strings.IndexFunc(token, func(r rune) bool { return r > 127 }) >= 0 {
		return nil, errInvalidValue("ClientToken", token)
	}
	if token == "" {
		return s.createFleetOnce(p)
	}
	request := canonicalRequest(p, "ClientToken")
	if prior, ok := s.st.fleetTokens[token]; ok {
		if prior.request != request {
			return nil, apiErrorf(400, "IdempotentParameterMismatch",
				"Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
		}
		again := *prior.answer // its own request ID
		return &again, nil
	}
	resp, err := s.createFleetOnce(p)
	if err != nil {
		return nil, err
	}
	first := *resp.(*createFleetResponse)
	s.st.fleetTokens[token] = fleetToken{request: request, answer: &first}
	return resp, nil
}

// canonicalRequest is every parameter of the request but the action, the
// API version and the named ones, sorted, as one string.
func canonicalRequest(p params, without ...string) string {
	keys := make([]string, 0, len(p.v))
	for k := range p.v {
		if k == "Action" || k == "Version" || slices.Contains(without, k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range p.v[k] {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// createFleetOnce serves one CreateFleet request, token aside.
func (s *Service) createFleetOnce(p params) (response, error) {
	if t := p.get("Type"); t != "instant" {
		return nil, apiErrorf(400, "InvalidParameterValue", "Value (%s) for parameter Type is invalid. This endpoint models only instant fleets.", t)
	}
	tcs := p.sub("TargetCapacitySpecification")
	total, ok, err := tcs.int("TotalTargetCapacity")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissing("TargetCapacitySpecification.TotalTargetCapacity")
	}
	if total < 1 {
		return nil, errInvalidValue("TargetCapacitySpecification.TotalTargetCapacity", itoa(total))
	}
	capacityType := tcs.get("DefaultTargetCapacityType")
	switch capacityType {
	case "":
		capacityType = CapacityTypeOnDemand
		if n, _, _ := tcs.int("SpotTargetCapacity"); n > 0 {
			capacityType = CapacityTypeSpot
		}
	case CapacityTypeOnDemand, CapacityTypeSpot:
	case "capacity-block":
		// A Capacity Block launch: its instances are on-demand instances in
		// the block the launch template targets.
		capacityType = CapacityTypeOnDemand
	default:
		return nil, apiErrorf(400, "InvalidParameterValue", "Value (%s) for parameter TargetCapacitySpecification.DefaultTargetCapacityType is invalid. This endpoint models spot and on-demand.", capacityType)
	}
	strategyKey := "OnDemandOptions.AllocationStrategy"
	if capacityType == CapacityTypeSpot {
		strategyKey = "SpotOptions.AllocationStrategy"
	}
	strategy := p.get(strategyKey)
	if strategy == "" {
		strategy = strategies[capacityType][0]
	}
	if !slices.Contains(strategies[capacityType], strategy) {
		return nil, errInvalidValue(strategyKey, strategy)
	}
	specs, err := p.tagSpecs("TagSpecification")
	if err != nil {
		return nil, err
	}
	cands, err := s.fleetCandidatesLocked(p, capacityType)
	if err != nil {
		return nil, err
	}
	sortCandidates(cands, strings.HasSuffix(strategy, "prioritized"))

	fleetTags := map[string]string{}
	for _, ts := range specs {
		if ts.ResourceType == "instance" {
			maps.Copy(fleetTags, tagMap(ts.Tags))
		}
	}
	out := &createFleetResponse{FleetID: "fleet-" + s.uuidLocked()}
	remaining := int(total)
	for _, c := range cands {
		if remaining == 0 {
			break
		}
		code, msg := s.unavailableLocked(c, capacityType)
		if id := targetedReservation(c.lt); code == "" && id != "" {
			code, msg = s.reservationUnavailableLocked(c, id)
		}
		if code != "" {
			out.Errors = append(out.Errors, fleetErrorXML{LaunchTemplateAndOverrides: c.xml(), Lifecycle: capacityType, ErrorCode: code, ErrorMessage: msg})
			continue
		}
		ids := s.launchLocked(c, capacityType, remaining, out.FleetID, fleetTags)
		remaining -= len(ids)
		out.Instances = append(out.Instances, fleetInstanceXML{LaunchTemplateAndOverrides: c.xml(), Lifecycle: capacityType, InstanceIDs: items{Items: ids}, InstanceType: c.typ})
	}
	return out, nil
}

// fleetCandidatesLocked resolves LaunchTemplateConfigs.N and their
// Overrides.M.
func (s *Service) fleetCandidatesLocked(p params, capacityType string) ([]*override, error) {
	configs, err := p.members("LaunchTemplateConfigs")
	if err != nil {
		return nil, err
	}
	if len(configs) == 0 {
		return nil, errMissing("LaunchTemplateConfigs")
	}
	var out []*override
	for _, cfg := range configs {
		spec := cfg.sub("LaunchTemplateSpecification")
		x := ltSpecXML{LaunchTemplateID: spec.get("LaunchTemplateId"), LaunchTemplateName: spec.get("LaunchTemplateName"), Version: spec.get("Version")}
		var lt *launchTemplate
		switch {
		case x.LaunchTemplateID != "":
			if lt = s.templateByIDLocked(x.LaunchTemplateID); lt == nil {
				return nil, errTemplateNotFound(true)
			}
		case x.LaunchTemplateName != "":
			if lt = s.templateByNameLocked(x.LaunchTemplateName); lt == nil {
				return nil, errTemplateNotFound(false)
			}
		default:
			return nil, errMissing(spec.key("LaunchTemplateId or LaunchTemplateName"))
		}
		switch x.Version {
		case "", "$Latest", "$Default", "1":
		default:
			return nil, apiErrorf(400, "InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template %s", x.Version, lt.ID)
		}
		ovs, err := cfg.members("Overrides")
		if err != nil {
			return nil, err
		}
		if len(ovs) == 0 {
			ovs = []params{cfg.sub("Overrides.1")}
		}
		for _, ov := range ovs {
			c := &override{lt: lt, spec: x, typ: ov.get("InstanceType"), zone: ov.get("AvailabilityZone"), subnetID: ov.get("SubnetId"), imageID: ov.get("ImageId"), ordinal: len(out)}
			if c.typ == "" {
				c.typ = lt.Data.InstanceType
			}
			if c.typ == "" {
				return nil, errMissing(ov.key("InstanceType"))
			}
			if _, ok := types().byName[c.typ]; !ok {
				return nil, errInvalidValue(ov.key("InstanceType"), c.typ)
			}
			if prio, ok, err := ov.float("Priority"); err != nil {
				return nil, err
			} else if ok {
				c.priority = &prio
			}
			if c.subnetID != "" {
				sn := s.subnetLocked(c.subnetID)
				if sn == nil {
					return nil, apiErrorf(400, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", c.subnetID)
				}
				c.zone = sn.Zone
			}
			if c.zone != "" {
				c.price, c.priced = s.priceLocked(c.typ, c.zone, capacityType)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// priceLocked returns an offering's catalog price.
func (s *Service) priceLocked(instanceType, zone, capacityType string) (float64, bool) {
	if capacityType == CapacityTypeSpot {
		if _, ok := onDemandPrice(instanceType); !ok {
			return 0, false
		}
		p, err := s.spotPriceLocked(instanceType, zone)
		return p, err == nil
	}
	return onDemandPrice(instanceType)
}

// sortCandidates orders candidates as the allocation strategy tries them:
// by price then priority, or (prioritized strategies) by priority then
// price. A missing priority ranks last; ties keep request order. Pools are
// all equally deep in this model, so the capacity-optimized strategies
// reduce to these orders.
func sortCandidates(cands []*override, prioritized bool) {
	prio := func(o *override) float64 {
		if o.priority == nil {
			return math.Inf(1)
		}
		return *o.priority
	}
	price := func(o *override) float64 {
		if !o.priced {
			return math.Inf(1)
		}
		return o.price
	}
	slices.SortStableFunc(cands, func(a, b *override) int {
		keys := [][2]float64{{price(a), price(b)}, {prio(a), prio(b)}}
		if prioritized {
			keys[0], keys[1] = keys[1], keys[0]
		}
		for _, k := range keys {
			if k[0] != k[1] {
				if k[0] < k[1] {
					return -1
				}
				return 1
			}
		}
		return a.ordinal - b.ordinal
	})
}

// unavailableLocked tells why a candidate cannot launch, as the errorCode
// and errorMessage EC2 reports for it; "" when it can. It resolves the
// candidate's subnet and image as a side effect.
func (s *Service) unavailableLocked(c *override, capacityType string) (string, string) {
	if c.subnetID == "" {
		var best *subnet
		for _, sn := range s.st.subnets {
			if (c.zone == "" || sn.Zone == c.zone) && (best == nil || sn.AvailableIPs > best.AvailableIPs) {
				best = sn
			}
		}
		if best == nil {
			return "InvalidParameterValue", fmt.Sprintf("No subnet found in availability zone '%s'", c.zone)
		}
		c.subnetID, c.zone = best.ID, best.Zone
		c.price, c.priced = s.priceLocked(c.typ, c.zone, capacityType)
	}
	if !c.priced {
		return "Unsupported", fmt.Sprintf("The requested configuration is currently not supported. Instance type %s is not offered in %s.", c.typ, c.zone)
	}
	if code, ok := s.st.fleetErrors[offeringKey{c.typ, c.zone, capacityType}]; ok {
		return code, fleetErrorMessages[code]
	}
	if s.st.ice[offeringKey{c.typ, c.zone, capacityType}] {
		if capacityType == CapacityTypeSpot {
			return "InsufficientInstanceCapacity", "There is no Spot capacity available that matches your request."
		}
		return "InsufficientInstanceCapacity", fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing a different Availability Zone.", c.typ, c.zone, c.typ)
	}
	imageID := c.imageID
	if imageID == "" {
		imageID = c.lt.Data.ImageID
	}
	if imageID == "" {
		return "MissingParameter", "The request must contain the parameter ImageId"
	}
	img := s.imageLocked(imageID)
	if img == nil || img.State != "available" {
		return "InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", imageID)
	}
	if arch := types().byName[c.typ].xml.ProcessorInfo.SupportedArchitectures.Items[0]; arch != img.Architecture {
		return "InvalidParameterValue", fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI. Specify an instance type and an AMI that have matching architectures, and try again.", arch, img.Architecture)
	}
	if s.subnetLocked(c.subnetID).AvailableIPs <= 0 {
		return "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnetID)
	}
	return "", ""
}

// launchLocked launches up to n instances of a candidate, as many as its
// subnet has addresses for, and returns their ids.
func (s *Service) launchLocked(c *override, capacityType string, n int, fleetID string, fleetTags map[string]string) []string {
	sn := s.subnetLocked(c.subnetID)
	imageID := c.imageID
	if imageID == "" {
		imageID = c.lt.Data.ImageID
	}
	tags := c.lt.Data.tagsFor("instance")
	maps.Copy(tags, fleetTags)
	tags["aws:ec2launchtemplate:id"] = c.lt.ID
	tags["aws:ec2launchtemplate:version"] = "1"
	tags["aws:ec2:fleet-id"] = fleetID
	ifaces := []string{}
	for _, ni := range c.lt.Data.NetworkInterfaces {
		t := ni.InterfaceType
		if t == "" {
			t = "interface"
		}
		ifaces = append(ifaces, t)
	}
	if len(ifaces) == 0 {
		ifaces = []string{"interface"}
	}
	tenancy := c.lt.Data.Params["Placement.Tenancy"]
	if tenancy == "" {
		tenancy = "default"
	}
	reservation := s.newIDLocked("r")
	now := s.now()
	target := targetedReservation(c.lt)
	cr := s.reservationLocked(target) // nil when the template targets none
	if cr == nil && capacityType == CapacityTypeOnDemand {
		// An on-demand launch whose template does not opt out is absorbed
		// by an open reservation that matches it, as on EC2.
		if cr = s.openReservationLocked(c, tenancy, c.lt.Data.Params["CapacityReservationSpecification.CapacityReservationPreference"]); cr != nil {
			target = cr.ID
		}
	}
	var ids []string
	for range n {
		if cr != nil && cr.AvailableInstanceCount <= 0 {
			break
		}
		ip, ok := sn.allocate()
		if !ok {
			break
		}
		if cr != nil {
			cr.AvailableInstanceCount--
		}
		in := &instance{Instance{
			ID:                    s.newIDLocked("i"),
			InstanceType:          c.typ,
			Zone:                  sn.Zone,
			ZoneID:                sn.ZoneID,
			SubnetID:              sn.ID,
			VPCID:                 sn.VPCID,
			ImageID:               imageID,
			Architecture:          types().byName[c.typ].xml.ProcessorInfo.SupportedArchitectures.Items[0],
			LaunchTime:            now,
			CapacityType:          capacityType,
			Tenancy:               tenancy,
			PrivateIP:             ip.String(),
			PrivateDNSName:        s.privateDNSName(ip.String()),
			Tags:                  cloneTags(tags),
			UserData:              slices.Clone(c.lt.Data.UserData),
			LaunchTemplateID:      c.lt.ID,
			LaunchTemplateName:    c.lt.Name,
			LaunchTemplateVersion: "1",
			SecurityGroupIDs:      c.lt.Data.securityGroups(),
			IAMInstanceProfile:    c.lt.Data.IAMInstanceProfile,
			InterfaceTypes:        slices.Clone(ifaces),
			FleetID:               fleetID,
			ReservationID:         reservation,
			CapacityReservationID: target,
		}}
		if capacityType == CapacityTypeSpot {
			in.SpotInstanceRequestID = s.newIDLocked("sir")
		}
		s.st.insts = append(s.st.insts, in)
		s.st.byID[in.ID] = in
		s.setStateLocked(in, StatePending, "", now)
		ids = append(ids, in.ID)
	}
	return ids
}

// privateDNSName is EC2's internal host name for an address.
func (s *Service) privateDNSName(ip string) string {
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if s.cfg.Region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + s.cfg.Region + ".compute.internal"
}
