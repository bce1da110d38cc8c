package instance

import (
	"context"
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
}

// Offering is one (instance type, zone) the launch may use, at its price.
type Offering struct {
	InstanceType string
	Zone         string
	Price        float64
}

// LaunchRequest is everything one launch needs, resolved by the caller.
type LaunchRequest struct {
	// NodeClaim names the claim the instance is for; it is tagged with it.
	NodeClaim string
	// CapacityType is spot or on-demand.
	CapacityType string
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
	templateOf := map[string]LaunchTemplate{}
	for _, t := range req.Templates {
		for _, it := range t.InstanceTypes {
			if _, dup := templateOf[it]; !dup {
				templateOf[it] = t
			}
		}
	}
	overrides := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	seen := map[[2]string]bool{}
	types := map[string]bool{}
	for _, o := range req.Offerings {
		t, ok := templateOf[o.InstanceType]
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
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(req.CapacityType),
		},
		TagSpecifications: tagSpecifications(req.Tags,
			ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet),
	}
	if req.CapacityType == "spot" {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in, nil
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
		return inst, errs
	}
	return nil, errs
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
	err := fmt.Errorf("creating fleet: %s", strings.Join(dedupe(msgs), "; "))
	if unfulfillable {
		return cloudprovider.NewInsufficientCapacityError(err)
	}
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
		}
	}
	if inst == nil {
		return nil, launchFailure(errs)
	}
	return inst, nil
}
