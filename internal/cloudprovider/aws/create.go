package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/launchtemplate"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/overlay"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// maxInstanceTypes is how many types one launch offers EC2.
const maxInstanceTypes = 60

// ZoneIDLabelKey carries the availability-zone ID of a node.
const ZoneIDLabelKey = "topology.k8s.aws/zone-id"

// Create launches the claim's instance. A claim whose instance exists
// already (tagged with its name) gets that instance back.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	// 1. The claim's EC2NodeClass must exist and be Ready.
	if nodeClaim.Spec.NodeClassRef == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeclaim %s has no nodeClassRef", nodeClaim.Name))
	}
	nc, err := c.nodeClass(ctx, nodeClaim.Spec.NodeClassRef.Name)
	if err != nil {
		return nil, err
	}
	reqs, err := requirements.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		err = fmt.Errorf("parsing requirements of nodeclaim %s: %w", nodeClaim.Name, err)
		return nil, cloudprovider.NewCreateError(err, "InvalidRequirements", err.Error())
	}
	// 2. The types the claim allows whose allocatable fits its requests.
	all, err := c.instanceTypes.List(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("listing instance types of ec2nodeclass %s: %w", nc.Name, err)
	}
	// With the NodeOverlays of the claim's NodePool, when the overlay
	// decorator launches: overlaid prices and capacity.
	all = overlay.InstanceTypes(ctx, all)
	candidates := compatible(all, reqs, nodeClaim.Spec.Resources.Requests)
	// 3. Reserved when allowed and a reservation has room, else spot when
	//    allowed and available, else on-demand; cheapest types first.
	capacityType := chooseCapacityType(candidates, reqs)
	plan := launchPlan(candidates, reqs, capacityType)
	if capacityType == karpv1.CapacityTypeReserved {
		plan = reservedPlan(plan, nc)
	}
	if len(plan.types) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf(
			"all offerings were unavailable: no available %s offering of the %d instance types nodeclaim %s allows fits its requests",
			capacityType, len(candidates), nodeClaim.Name))
	}
	// 4. Launch templates, then one CreateFleet call; templates found gone
	//    are recreated and the launch retried once.
	tags := c.tags(nc, nodeClaim)
	inst, err := c.launch(ctx, nc, nodeClaim, capacityType, plan, tags)
	if err != nil {
		return nil, err
	}
	log.FromContext(ctx).V(1).Info("Launched instance", "NodeClaim", klog.KObj(nodeClaim), "instanceID", inst.ID,
		"instanceType", inst.Type, "zone", inst.Zone, "capacityType", inst.CapacityType, "imageID", inst.ImageID)
	return c.launched(nodeClaim, nc, inst, plan)
}

func (c *CloudProvider) launch(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, capacityType string,
	plan launchCandidates, tags map[string]string) (*instance.Instance, error) {
	templateTags := maps.Clone(tags)
	delete(templateTags, instance.TagNodeClaim)
	req := instance.LaunchRequest{
		NodeClaim: nodeClaim.Name, NodeClaimUID: string(nodeClaim.UID), CapacityType: capacityType, ReservationType: plan.reservationType, Offerings: plan.offerings,
		Subnets: subnetsByZone(nc), Tags: tags, Context: nc.Spec.Context,
		Prioritized: nodeClaim.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] == "true",
	}
	// One set of templates per reservation of a reserved launch (each
	// targets its reservation), else one set.
	reservations := []string{""}
	if capacityType == karpv1.CapacityTypeReserved {
		reservations = plan.reservations()
	}
	var templates []launchtemplate.Template
	var names []string
	for _, id := range reservations {
		resolved, err := launchtemplate.Resolve(c.cluster, launchtemplate.Input{
			NodeClass: nc, NodeClaim: nodeClaim, CapacityType: capacityType, InstanceTypes: plan.typesOf(id), Tags: templateTags,
			CapacityReservationID: id, CapacityReservationType: plan.reservationType,
		})
		if err != nil {
			return nil, cloudprovider.NewCreateError(err, "LaunchTemplateResolutionFailed", err.Error())
		}
		for _, t := range resolved {
			req.Templates = append(req.Templates, instance.LaunchTemplate{Name: t.Name, ImageID: t.ImageID, InstanceTypes: t.InstanceTypes, ReservationID: id})
			names = append(names, t.Name)
		}
		templates = append(templates, resolved...)
	}
	for attempt := 0; ; attempt++ {
		if err := c.launchTemplates.Ensure(ctx, templates); err != nil {
			return nil, fmt.Errorf("ensuring launch templates: %w", err)
		}
		inst, err := c.instances.Launch(ctx, req)
		if createErr, ok := cloudprovider.AsCreateError(err); ok && createErr.ConditionReason == "LaunchTemplateNotFound" && attempt == 0 {
			c.launchTemplates.Invalidate(names...)
			continue
		}
		return inst, err
	}
}

// launchCandidates are the types of a launch, cheapest first, and their
// offerings of the chosen capacity type.
type launchCandidates struct {
	types     []*cloudprovider.InstanceType
	offerings []instance.Offering
	// reservationType is the type of the reservations of a reserved launch.
	reservationType string
}

// reservations lists the reservations of the plan's offerings, in order.
func (p launchCandidates) reservations() []string {
	var out []string
	for _, o := range p.offerings {
		if o.ReservationID != "" && !slices.Contains(out, o.ReservationID) {
			out = append(out, o.ReservationID)
		}
	}
	return out
}

// typesOf returns the plan's types that have an offering in reservation id
// (every type for "").
func (p launchCandidates) typesOf(id string) []*cloudprovider.InstanceType {
	if id == "" {
		return p.types
	}
	return p.typesWith(func(o instance.Offering) bool { return o.ReservationID == id })
}

// typesWith returns the plan's types that have an offering keep accepts.
func (p launchCandidates) typesWith(keep func(instance.Offering) bool) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range p.types {
		if slices.ContainsFunc(p.offerings, func(o instance.Offering) bool { return o.InstanceType == it.Name && keep(o) }) {
			out = append(out, it)
		}
	}
	return out
}

// reservedPlan narrows a reserved plan as Karpenter does: to one
// reservation type (default, On-Demand Capacity Reservations, when any has
// room; else capacity blocks, of which only the cheapest offering is kept),
// and per type and zone to the reservation with the most room.
func reservedPlan(plan launchCandidates, nc *awsv1.EC2NodeClass) launchCandidates {
	typeOf := map[string]string{}
	for _, cr := range nc.Status.CapacityReservations {
		typeOf[cr.ID] = string(cr.ReservationType)
		if typeOf[cr.ID] == "" {
			typeOf[cr.ID] = string(awsv1.CapacityReservationTypeDefault)
		}
	}
	plan.reservationType = string(awsv1.CapacityReservationTypeCapacityBlock)
	for _, o := range plan.offerings {
		if typeOf[o.ReservationID] == string(awsv1.CapacityReservationTypeDefault) {
			plan.reservationType = string(awsv1.CapacityReservationTypeDefault)
		}
	}
	best := map[[2]string]instance.Offering{}
	room := map[string]int{}
	for _, it := range plan.types {
		for _, o := range it.Offerings {
			if o.ReservationID != "" {
				room[o.ReservationID] = o.ReservationCapacity
			}
		}
	}
	var kept []instance.Offering
	for _, o := range plan.offerings {
		if typeOf[o.ReservationID] != plan.reservationType {
			continue
		}
		key := [2]string{o.InstanceType, o.Zone}
		if b, ok := best[key]; !ok || room[o.ReservationID] > room[b.ReservationID] {
			best[key] = o
		}
	}
	for _, o := range plan.offerings {
		if b, ok := best[[2]string{o.InstanceType, o.Zone}]; ok && b == o {
			kept = append(kept, o)
		}
	}
	if plan.reservationType == string(awsv1.CapacityReservationTypeCapacityBlock) && len(kept) > 1 {
		kept = kept[:1]
	}
	plan.offerings = kept
	plan.types = plan.typesWith(func(instance.Offering) bool { return true })
	return plan
}

// compatible keeps the types the claim's requirements allow, that have an
// available offering they allow, and whose allocatable fits the requests.
func compatible(all []*cloudprovider.InstanceType, reqs requirements.Requirements, requests corev1.ResourceList) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range all {
		if it.Requirements.Intersects(reqs) != nil || !fits(requests, it.Allocatable()) {
			continue
		}
		if _, ok := it.CheapestOffering(offeringAllowed(reqs, "")); ok {
			out = append(out, it)
		}
	}
	return out
}

// offeringAllowed admits offerings in a zone and (when capacityType is set)
// of a capacity type the requirements allow.
func offeringAllowed(reqs requirements.Requirements, capacityType string) func(cloudprovider.Offering) bool {
	zone, hasZone := reqs.Get(corev1.LabelTopologyZone)
	ct, hasCT := reqs.Get(karpv1.CapacityTypeLabelKey)
	return func(o cloudprovider.Offering) bool {
		if capacityType != "" && o.CapacityType != capacityType {
			return false
		}
		return (!hasZone || zone.Has(o.Zone)) && (!hasCT || ct.Has(o.CapacityType))
	}
}

// chooseCapacityType is the first of reserved and spot that the claim
// allows and some candidate has an available offering of, else on-demand.
func chooseCapacityType(candidates []*cloudprovider.InstanceType, reqs requirements.Requirements) string {
	for _, ct := range []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeSpot} {
		allowed := offeringAllowed(reqs, ct)
		for _, it := range candidates {
			if _, ok := it.CheapestOffering(allowed); ok {
				return ct
			}
		}
	}
	return karpv1.CapacityTypeOnDemand
}

// launchPlan orders the candidates by their cheapest offering of the
// capacity type, keeps maxInstanceTypes of them and lists their offerings.
func launchPlan(candidates []*cloudprovider.InstanceType, reqs requirements.Requirements, capacityType string) launchCandidates {
	allowed := offeringAllowed(reqs, capacityType)
	type priced struct {
		it    *cloudprovider.InstanceType
		price float64
	}
	var ps []priced
	for _, it := range candidates {
		if o, ok := it.CheapestOffering(allowed); ok {
			ps = append(ps, priced{it, o.Price})
		}
	}
	slices.SortStableFunc(ps, func(a, b priced) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.it.Name, b.it.Name))
	})
	if len(ps) > maxInstanceTypes {
		ps = ps[:maxInstanceTypes]
	}
	var plan launchCandidates
	for _, p := range ps {
		plan.types = append(plan.types, p.it)
		for _, o := range p.it.Offerings {
			if o.Available && allowed(o) {
				plan.offerings = append(plan.offerings, instance.Offering{InstanceType: p.it.Name, Zone: o.Zone, Price: o.Price, ReservationID: o.ReservationID})
			}
		}
	}
	slices.SortStableFunc(plan.offerings, func(a, b instance.Offering) int { return cmp.Compare(a.Price, b.Price) })
	return plan
}

// fits reports whether allocatable covers every request.
func fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		have, ok := allocatable[name]
		if !ok {
			if q.IsZero() {
				continue
			}
			return false
		}
		if have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// subnetsByZone picks one subnet of the class per zone: the first the
// status lists (the class controller orders them by available IPs).
func subnetsByZone(nc *awsv1.EC2NodeClass) map[string]string {
	out := map[string]string{}
	for _, s := range nc.Status.Subnets {
		if _, ok := out[s.Zone]; !ok {
			out[s.Zone] = s.ID
		}
	}
	return out
}

// tags are the tags of the claim's instance: the class's tags, then the
// ones that scope it to the cluster, pool, class and claim.
func (c *CloudProvider) tags(nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim) map[string]string {
	tags := maps.Clone(nc.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[instance.TagClusterOwned+c.cluster.Name] = "owned"
	tags[instance.TagEKSCluster] = c.cluster.Name
	tags[instance.TagNodeClass] = nc.Name
	tags[instance.TagNodePool] = nodeClaim.Labels[karpv1.NodePoolLabelKey]
	tags[instance.TagNodeClaim] = nodeClaim.Name
	return tags
}

// launched returns the claim with the instance's provider ID, image, labels
// (the type's, zone, zone ID, capacity type), capacity and allocatable, and
// the class's hash annotations.
func (c *CloudProvider) launched(nodeClaim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, inst *instance.Instance, plan launchCandidates) (*karpv1.NodeClaim, error) {
	i := slices.IndexFunc(plan.types, func(it *cloudprovider.InstanceType) bool { return it.Name == inst.Type })
	if i < 0 {
		return nil, fmt.Errorf("instance %s of nodeclaim %s is a %s, which the launch did not offer", inst.ID, nodeClaim.Name, inst.Type)
	}
	it := plan.types[i]
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range it.Requirements.Labels() {
		out.Labels[k] = v
	}
	out.Labels[corev1.LabelInstanceTypeStable] = inst.Type
	out.Labels[corev1.LabelTopologyZone] = inst.Zone
	out.Labels[karpv1.CapacityTypeLabelKey] = inst.CapacityType
	if inst.CapacityReservationID != "" {
		out.Labels[awsv1.LabelCapacityReservationID] = inst.CapacityReservationID
		out.Labels[awsv1.LabelCapacityReservationType] = cmp.Or(inst.CapacityReservationType, string(awsv1.CapacityReservationTypeDefault))
	}
	for _, s := range nc.Status.Subnets {
		if s.ID == inst.SubnetID && s.ZoneID != "" {
			out.Labels[ZoneIDLabelKey] = s.ZoneID
		}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for _, key := range []string{awsv1.AnnotationEC2NodeClassHash, awsv1.AnnotationEC2NodeClassHashVersion} {
		if v, ok := nc.Annotations[key]; ok {
			out.Annotations[key] = v
		}
	}
	if nc.Status.InstanceProfile != "" {
		out.Annotations[InstanceProfileAnnotationKey] = nc.Status.InstanceProfile
	}
	out.Status.ProviderID = inst.ProviderID()
	out.Status.ImageID = inst.ImageID
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable().DeepCopy()
	return out, nil
}

// InstanceProfileAnnotationKey records on a NodeClaim the instance profile
// its instance was launched with.
const InstanceProfileAnnotationKey = awsv1.Group + "/instance-profile-name"
