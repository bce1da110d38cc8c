package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// LaunchTemplate is one launch template of a launch and the instance types
// it serves (each type takes the template of the AMI it runs).
type LaunchTemplate struct {
	// Name is the template's name, karpenter.k8s.aws/<hash>.
	Name string
	// ImageID is the template's AMI; each override repeats it.
	ImageID string
	// InstanceTypes are the types launched from this template.
	InstanceTypes []string
	// ReservationID is the capacity reservation the template targets, for
	// reserved launches (one template per reservation).
	ReservationID string
}

// Offering is one (instance type, zone) the launch may use, at its price.
type Offering struct {
	InstanceType string
	Zone         string
	Price        float64
	// ReservationID is the reservation of a reserved offering.
	ReservationID string
}

// LaunchRequest is everything one launch needs, resolved by the caller.
type LaunchRequest struct {
	// NodeClaim names the claim the instance is for; it is tagged with it.
	NodeClaim string
	// NodeClaimUID is the claim's UID: with the request, it makes the
	// CreateFleet ClientToken (see clientToken).
	NodeClaimUID string
	// CapacityType is spot, on-demand or reserved.
	CapacityType string
	// ReservationType is the type of the reservations of a reserved launch:
	// default or capacity-block.
	ReservationType string
	// Templates are the launch templates and the types each serves.
	Templates []LaunchTemplate
	// Offerings are the available offerings the claim allows, of the
	// chosen capacity type, cheapest first.
	Offerings []Offering
	// Subnets maps each zone to the subnet to launch in; offerings in a zone
	// without a subnet are left out.
	Subnets map[string]string
	// Tags go on the instance, its volumes and the fleet.
	Tags map[string]string
	// Context is the EC2NodeClass's spec.context (EC2 Fleet Context).
	Context *string
	// Prioritized launches by the offerings' Price (each override's
	// Priority, lowest first) instead of EC2's own prices: a NodeOverlay
	// changed the price of an offering the claim allows (the claim is
	// annotated karpenter.sh/price-overlay-applied). Spot then uses
	// capacity-optimized-prioritized and on-demand prioritized, as
	// Karpenter does.
	Prioritized bool
}

// Unfulfillable error codes: EC2 has no capacity (or quota) for the
// offering now; the offering is marked unavailable and the next one tried.
var unfulfillableCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"MaxSpotInstanceCountExceeded":      true,
	"VcpuLimitExceeded":                 true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true,
	"InsufficientFreeAddressesInSubnet": true,
	"MaxFleetCountExceeded":             true,
	"ReservationCapacityExceeded":       true,
}

// IsUnfulfillableCapacity reports whether a CreateFleet error code means
// the offering has no capacity now.
func IsUnfulfillableCapacity(code string) bool { return unfulfillableCodes[code] }

// maxOverrideTypes is the most instance types one launch offers EC2, as
// Karpenter truncates them.
const maxOverrideTypes = 60

// buildFleetInput turns a launch into a CreateFleet request.
func buildFleetInput(req LaunchRequest) (*ec2.CreateFleetInput, error) {
	templateOf := map[[2]string]LaunchTemplate{}
	for _, t := range req.Templates {
		for _, it := range t.InstanceTypes {
			if _, dup := templateOf[[2]string{it, t.ReservationID}]; !dup {
				templateOf[[2]string{it, t.ReservationID}] = t
			}
		}
	}
	overrides := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	seen := map[[2]string]bool{}
	types := map[string]bool{}
	for _, o := range req.Offerings {
		t, ok := templateOf[[2]string{o.InstanceType, o.ReservationID}]
		subnet := req.Subnets[o.Zone]
		if !ok || subnet == "" || seen[[2]string{o.InstanceType, o.Zone}] {
			continue
		}
		if !types[o.InstanceType] && len(types) == maxOverrideTypes {
			continue
		}
		types[o.InstanceType] = true
		seen[[2]string{o.InstanceType, o.Zone}] = true
		overrides[t.Name] = append(overrides[t.Name], ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType:     ec2types.InstanceType(o.InstanceType),
			SubnetId:         aws.String(subnet),
			ImageId:          aws.String(t.ImageID),
			AvailabilityZone: aws.String(o.Zone),
			Priority:         aws.Float64(o.Price),
		})
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, t := range req.Templates {
		if len(overrides[t.Name]) == 0 {
			continue
		}
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String(t.Name),
				Version:            aws.String("$Latest"),
			},
			Overrides: overrides[t.Name],
		})
	}
	if len(configs) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no offering of the %d allowed has a subnet and a launch template", len(req.Offerings)))
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		Context:               req.Context,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: targetCapacityType(req),
		},
		TagSpecifications: tagSpecifications(req.Tags,
			ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet),
	}
	switch {
	case req.CapacityType == "spot" && req.Prioritized:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case req.CapacityType == "spot":
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case req.CapacityType == capacityTypeReserved && req.ReservationType == reservationTypeCapacityBlock:
		// A capacity block takes no allocation strategy.
	case req.Prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in, nil
}

const (
	capacityTypeReserved         = "reserved"
	reservationTypeCapacityBlock = "capacity-block"
)

// targetCapacityType is the fleet's DefaultTargetCapacityType: the capacity
// type, except that a reserved launch is on-demand into an On-Demand
// Capacity Reservation and capacity-block into a Capacity Block (the
// launch template targets the reservation).
func targetCapacityType(req LaunchRequest) ec2types.DefaultTargetCapacityType {
	switch {
	case req.CapacityType != capacityTypeReserved:
		return ec2types.DefaultTargetCapacityType(req.CapacityType)
	case req.ReservationType == reservationTypeCapacityBlock:
		return ec2types.DefaultTargetCapacityTypeCapacityBlock
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}

// tagSpecifications tags each resource type with tags, keys sorted.
func tagSpecifications(tags map[string]string, resourceTypes ...ec2types.ResourceType) []ec2types.TagSpecification {
	var ec2Tags []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		ec2Tags = append(ec2Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	out := make([]ec2types.TagSpecification, 0, len(resourceTypes))
	for _, rt := range resourceTypes {
		out = append(out, ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags})
	}
	return out
}

// clientToken is the CreateFleet ClientToken of a launch: a digest of the
// claim's UID and the request. A launch retried with the same request (a
// controller restarted after CreateFleet returned but before the claim
// recorded its instance, while EC2 does not describe the new instance yet)
// gets the instance the first call launched instead of a second one; EC2
// keeps tokens for at least 24 hours after the instance terminates. Any
// change to the request (offerings marked unavailable since, new prices, a
// recreated template) makes a new token, so a token is never reused with
// other parameters. A claim without a UID (never stored) gets no token.
func clientToken(nodeClaimUID string, in *ec2.CreateFleetInput) (*string, error) {
	if nodeClaimUID == "" {
		return nil, nil
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding the fleet request for its client token: %w", err)
	}
	sum := sha256.Sum256(append([]byte(nodeClaimUID+"\n"), body...))
	// EC2 takes at most 64 ASCII characters.
	return aws.String("dovetail-" + hex.EncodeToString(sum[:])[:48]), nil
}

// FleetError is one per-override error of a CreateFleet answer.
type FleetError struct {
	Code, Message              string
	InstanceType, Zone, Subnet string
}

// launchResult reads a CreateFleet answer: the instance, if one came back,
// and the per-override errors.
func launchResult(out *ec2.CreateFleetOutput, req LaunchRequest) (*Instance, []FleetError) {
	var errs []FleetError
	for _, e := range out.Errors {
		fe := FleetError{Code: deref(e.ErrorCode), Message: deref(e.ErrorMessage)}
		if lto := e.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
			fe.InstanceType = string(lto.Overrides.InstanceType)
			fe.Zone = deref(lto.Overrides.AvailabilityZone)
			fe.Subnet = deref(lto.Overrides.SubnetId)
		}
		errs = append(errs, fe)
	}
	for _, fi := range out.Instances {
		if len(fi.InstanceIds) == 0 {
			continue
		}
		inst := &Instance{
			ID:           fi.InstanceIds[0],
			Type:         string(fi.InstanceType),
			CapacityType: req.CapacityType,
			State:        string(ec2types.InstanceStateNamePending),
			Tags:         maps.Clone(req.Tags),
		}
		if lto := fi.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
			inst.Zone = deref(lto.Overrides.AvailabilityZone)
			inst.SubnetID = deref(lto.Overrides.SubnetId)
			inst.ImageID = deref(lto.Overrides.ImageId)
			if inst.Type == "" {
				inst.Type = string(lto.Overrides.InstanceType)
			}
		}
		if fi.Lifecycle == ec2types.InstanceLifecycleSpot {
			inst.CapacityType = "spot"
		}
		if req.CapacityType == capacityTypeReserved {
			inst.CapacityReservationID = reservationOf(req, fi.LaunchTemplateAndOverrides)
			inst.CapacityReservationType = req.ReservationType
		}
		return inst, errs
	}
	return nil, errs
}

// reservationOf returns the reservation targeted by the launch template a
// fleet answer names.
func reservationOf(req LaunchRequest, lto *ec2types.LaunchTemplateAndOverridesResponse) string {
	if lto == nil || lto.LaunchTemplateSpecification == nil {
		if len(req.Templates) == 1 {
			return req.Templates[0].ReservationID
		}
		return ""
	}
	name := deref(lto.LaunchTemplateSpecification.LaunchTemplateName)
	for _, t := range req.Templates {
		if t.Name == name {
			return t.ReservationID
		}
	}
	return ""
}

// launchFailure is the error of a launch that returned no instance.
func launchFailure(errs []FleetError) error {
	if len(errs) == 0 {
		return cloudprovider.NewCreateError(errors.New("CreateFleet returned no instance and no error"), "LaunchFailed", "too few instances returned")
	}
	unfulfillable := true
	var msgs []string
	for _, e := range errs {
		unfulfillable = unfulfillable && IsUnfulfillableCapacity(e.Code)
		msgs = append(msgs, fmt.Sprintf("%s (%s, %s): %s", e.Code, e.InstanceType, e.Zone, e.Message))
	}
	if unfulfillable {
		return cloudprovider.NewInsufficientCapacityError(fmt.Errorf(
			"all %d offerings tried were unavailable during launch: %s", len(errs), strings.Join(dedupe(msgs), "; ")))
	}
	err := fmt.Errorf("creating fleet: %s", strings.Join(dedupe(msgs), "; "))
	reason := ConditionReason(errs[0].Code)
	return cloudprovider.NewCreateError(err, reason, err.Error())
}

// ConditionReason maps an EC2 error code to the Launched condition reason
// Karpenter uses for it.
func ConditionReason(code string) string {
	switch {
	case code == "AuthFailure.ServiceLinkedRoleCreationNotPermitted":
		return "SpotSLRCreationFailed"
	case code == "UnauthorizedOperation" || code == "AuthFailure":
		return "Unauthorized"
	case strings.HasPrefix(code, "InvalidLaunchTemplateName.NotFound") || strings.HasPrefix(code, "InvalidLaunchTemplateId.NotFound"):
		return "LaunchTemplateNotFound"
	case code == "InvalidAMIID.Malformed":
		return "InvalidAMIID"
	case code == "InvalidAMIID.NotFound":
		return "AMINotFound"
	case code == "InvalidUserData.Malformed":
		return "UserDataSizeLimitExceeded"
	case code == "RequestLimitExceeded":
		return "RequestLimitExceeded"
	case code == "InternalError":
		return "InternalError"
	case code == "InvalidParameterValue" || code == "InvalidParameterCombination":
		return "InvalidParameter"
	case code == "InsufficientFreeAddressesInSubnet":
		return "InsufficientFreeAddressesInSubnet"
	case code == "MaxSpotInstanceCountExceeded":
		return "SpotQuotaExceeded"
	case code == "VcpuLimitExceeded":
		return "VCPULimitExceeded"
	case code == "MaxFleetCountExceeded":
		return "FleetQuotaExceeded"
	}
	return "LaunchFailed"
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// launch sends the request; it is a method so Provider can record the
// instance it got.
func (p *Provider) launch(ctx context.Context, req LaunchRequest) (*Instance, error) {
	in, err := buildFleetInput(req)
	if err != nil {
		return nil, err
	}
	if in.ClientToken, err = clientToken(req.NodeClaimUID, in); err != nil {
		return nil, err
	}
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil {
		code := awsclient.ErrorCode(err)
		return nil, cloudprovider.NewCreateError(fmt.Errorf("creating fleet: %w", err), ConditionReason(code), err.Error())
	}
	inst, errs := launchResult(out, req)
	for _, e := range errs {
		p.countLaunchFailure(e, req.CapacityType)
		if IsUnfulfillableCapacity(e.Code) && e.InstanceType != "" && e.Zone != "" {
			p.onUnavailable(e.InstanceType, e.Zone, req.CapacityType, e.Code)
			if req.CapacityType == capacityTypeReserved && p.opts.OnReservationUnavailable != nil {
				for _, id := range reservationsFor(req, e.InstanceType, e.Zone) {
					p.opts.OnReservationUnavailable(id)
				}
			}
		}
	}
	if inst != nil && inst.CapacityReservationID != "" && p.opts.OnReservationLaunched != nil {
		p.opts.OnReservationLaunched(inst.CapacityReservationID)
	}
	if inst == nil {
		return nil, launchFailure(errs)
	}
	return inst, nil
}

// reservationsFor lists the reservations a reserved launch offered for a
// type in a zone.
func reservationsFor(req LaunchRequest, instanceType, zone string) []string {
	var out []string
	for _, o := range req.Offerings {
		if o.InstanceType == instanceType && o.Zone == zone && o.ReservationID != "" && !slices.Contains(out, o.ReservationID) {
			out = append(out, o.ReservationID)
		}
	}
	return out
}
