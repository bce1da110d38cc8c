package launchtemplate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/userdata"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// NamePrefix starts the name of every launch template the provider makes.
const NamePrefix = "karpenter.k8s.aws/"

// Cluster holds the cluster facts every node's user data carries.
type Cluster struct {
	// Name is the cluster name.
	Name string
	// Endpoint is the API server URL.
	Endpoint string
	// CABundle is the cluster CA, PEM, base64 (standard) encoded.
	CABundle string
	// CIDR is the service CIDR (AL2023's nodeadm needs it).
	CIDR string
	// DNS is the kube-dns Service's cluster IP, used when the class's kubelet
	// sets no clusterDNS.
	DNS []string
}

// Input is one launch's worth of templates to resolve.
type Input struct {
	// NodeClass is the claim's EC2NodeClass; its status must be resolved.
	NodeClass *awsv1.EC2NodeClass
	// NodeClaim supplies labels, taints and startup taints.
	NodeClaim *karpv1.NodeClaim
	// CapacityType is the capacity type of the launch.
	CapacityType string
	// CapacityReservationID, for a reserved launch, is the reservation the
	// templates target, and CapacityReservationType its type (default or
	// capacity-block).
	CapacityReservationID, CapacityReservationType string
	// InstanceTypes are the candidate types, in the order of preference.
	InstanceTypes []*cloudprovider.InstanceType
	// Tags go on each template and on the network interfaces (and spot
	// requests) it makes.
	Tags map[string]string
}

// Template is a resolved launch template.
type Template struct {
	// Name is NamePrefix + the hash of everything in the template.
	Name string
	// ImageID is the template's AMI.
	ImageID string
	// InstanceTypes are the types launched from it.
	InstanceTypes []string
	// Tags are the template's own tags.
	Tags map[string]string
	// Data is what CreateLaunchTemplate is given.
	Data *ec2types.RequestLaunchTemplateData
}

// Resolve builds the templates of one launch. A type that no AMI of the
// class suits is left out; Resolve fails when no type is left or when the
// user data cannot be rendered.
func Resolve(cluster Cluster, in Input) ([]Template, error) {
	nc := in.NodeClass
	family := nc.AMIFamily()
	type group struct {
		ami     awsv1.AMI
		maxPods int32
		types   []string
	}
	var groups []*group
	for _, it := range in.InstanceTypes {
		ami, ok := amiFor(nc.Status.AMIs, it)
		if !ok {
			continue
		}
		maxPods := podsOf(nc, it)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.ami.ID == ami.ID && g.maxPods == maxPods })
		if i < 0 {
			groups = append(groups, &group{ami: ami, maxPods: maxPods})
			i = len(groups) - 1
		}
		groups[i].types = append(groups[i].types, it.Name)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no AMI of ec2nodeclass %s (%d resolved) suits any of the %d instance types", nc.Name, len(nc.Status.AMIs), len(in.InstanceTypes))
	}
	out := make([]Template, 0, len(groups))
	for _, g := range groups {
		kubelet := &awsv1.KubeletConfiguration{}
		if nc.Spec.Kubelet != nil {
			kubelet = nc.Spec.Kubelet.DeepCopy()
		}
		if kubelet.MaxPods == nil {
			kubelet.MaxPods = aws.Int32(g.maxPods)
		}
		userData, err := userdata.Render(userdata.Options{
			Family:              family,
			ClusterName:         cluster.Name,
			ClusterEndpoint:     cluster.Endpoint,
			CABundle:            cluster.CABundle,
			ClusterCIDR:         cluster.CIDR,
			ClusterDNS:          cluster.DNS,
			Kubelet:             kubelet,
			Labels:              nodeLabels(in, nc),
			Taints:              slices.Concat(in.NodeClaim.Spec.Taints, in.NodeClaim.Spec.StartupTaints),
			InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
			CustomUserData:      nc.Spec.UserData,
			AMIVersion:          amiVersion(nc, g.ami),
			CapacityType:        in.CapacityType,
		})
		if err != nil {
			return nil, fmt.Errorf("rendering user data of ec2nodeclass %s: %w", nc.Name, err)
		}
		data := templateData(nc, g.ami.ID, userData, in.CapacityType, in.Tags)
		reservationSpec(data, in)
		name, err := hashName(data, in.Tags)
		if err != nil {
			return nil, err
		}
		out = append(out, Template{Name: name, ImageID: g.ami.ID, InstanceTypes: g.types, Tags: maps.Clone(in.Tags), Data: data})
	}
	return out, nil
}

// amiFor returns the first AMI whose requirements the type meets.
func amiFor(amis []awsv1.AMI, it *cloudprovider.InstanceType) (awsv1.AMI, bool) {
	for _, ami := range amis {
		reqs, err := requirements.FromNodeSelectorRequirements(ami.Requirements...)
		if err != nil {
			continue
		}
		if it.Requirements.Intersects(reqs) == nil {
			return ami, true
		}
	}
	return awsv1.AMI{}, false
}

// SuitedToAMIs returns, in order, the types that some AMI of the list suits
// (its requirements: architecture, GPU or accelerator variant, Windows
// build), the only ones a launch can use. The provider offers no other to
// the scheduler, so a pod that needs, say, arm64 on a class that resolves
// only x86_64 images is reported unschedulable instead of getting claims
// that fail at launch, again and again.
func SuitedToAMIs(amis []awsv1.AMI, its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	parsed := make([]requirements.Requirements, 0, len(amis))
	for _, ami := range amis {
		if reqs, err := requirements.FromNodeSelectorRequirements(ami.Requirements...); err == nil {
			parsed = append(parsed, reqs)
		}
	}
	out := make([]*cloudprovider.InstanceType, 0, len(its))
	for _, it := range its {
		if slices.ContainsFunc(parsed, func(reqs requirements.Requirements) bool { return it.Requirements.Intersects(reqs) == nil }) {
			out = append(out, it)
		}
	}
	return out
}

// podsOf is the kubelet's max pods for the type: the class's maxPods, else
// the type's pods capacity.
func podsOf(nc *awsv1.EC2NodeClass, it *cloudprovider.InstanceType) int32 {
	if nc.Spec.Kubelet != nil && nc.Spec.Kubelet.MaxPods != nil {
		return *nc.Spec.Kubelet.MaxPods
	}
	pods := it.Capacity[corev1.ResourcePods]
	return int32(pods.Value())
}

// nodeLabels are the labels the kubelet registers the node with: the
// claim's labels, its single-value requirements, and the class's name.
func nodeLabels(in Input, nc *awsv1.EC2NodeClass) map[string]string {
	nodeClaim := in.NodeClaim
	labels := map[string]string{}
	for _, r := range nodeClaim.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	maps.Copy(labels, nodeClaim.Labels)
	labels[awsv1.Group+"/ec2nodeclass"] = nc.Name
	if in.CapacityReservationID != "" {
		labels[awsv1.LabelCapacityReservationID] = in.CapacityReservationID
		labels[awsv1.LabelCapacityReservationType] = in.CapacityReservationType
	}
	return labels
}

// amiVersion is the Bottlerocket version the user data depends on: the
// alias's, else the AMI name's.
func amiVersion(nc *awsv1.EC2NodeClass, ami awsv1.AMI) string {
	if _, version, ok := nc.Alias(); ok {
		if v := userdata.BottlerocketVersion(version); v != "" {
			return v
		}
	}
	return userdata.BottlerocketVersion(ami.Name)
}

// templateData builds what CreateLaunchTemplate gets.
func templateData(nc *awsv1.EC2NodeClass, imageID, userData, capacityType string, tags map[string]string) *ec2types.RequestLaunchTemplateData {
	var groups []string
	for _, sg := range nc.Status.SecurityGroups {
		groups = append(groups, sg.ID)
	}
	slices.Sort(groups)
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:  aws.String(imageID),
		UserData: aws.String(userData),
		NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex:              aws.Int32(0),
			AssociatePublicIpAddress: nc.Spec.AssociatePublicIPAddress,
			Groups:                   groups,
		}},
		BlockDeviceMappings: blockDeviceMappings(nc),
		MetadataOptions:     metadataOptions(nc.Spec.MetadataOptions),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(nc.Spec.DetailedMonitoring != nil && *nc.Spec.DetailedMonitoring)},
		Placement:           &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault},
		TagSpecifications:   launchTemplateTags(tags, capacityType),
	}
	if nc.Status.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(nc.Status.InstanceProfile)}
	}
	return data
}

// reservationSpec makes the templates of a reserved launch target its
// reservation, and those of a capacity block use the capacity-block market.
// Other launches opt out of open reservations (preference none).
func reservationSpec(data *ec2types.RequestLaunchTemplateData, in Input) {
	if in.CapacityReservationID == "" {
		// Spot and on-demand launches stay out of open On-Demand Capacity
		// Reservations, as Karpenter's do: an open reservation absorbing an
		// on-demand launch would take a slot the provider counts as free
		// and price the node as reserved capacity it did not plan.
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
		}
		return
	}
	data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
		CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(in.CapacityReservationID)},
	}
	if in.CapacityReservationType == string(awsv1.CapacityReservationTypeCapacityBlock) {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	}
}

// launchTemplateTags tags the network interfaces, and spot requests when
// the launch is spot.
func launchTemplateTags(tags map[string]string, capacityType string) []ec2types.LaunchTemplateTagSpecificationRequest {
	var ec2Tags []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		ec2Tags = append(ec2Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	out := []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2Tags}}
	if capacityType == karpv1.CapacityTypeSpot {
		out = append(out, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: ec2Tags})
	}
	return out
}

// defaultBlockDevices are each family's root (and data) volumes when the
// class sets none. Custom has none: the AMI's own mappings apply.
var defaultBlockDevices = map[string][]struct {
	device string
	size   string
}{
	awsv1.AMIFamilyAL2:          {{"/dev/xvda", "20Gi"}},
	awsv1.AMIFamilyAL2023:       {{"/dev/xvda", "20Gi"}},
	awsv1.AMIFamilyBottlerocket: {{"/dev/xvda", "4Gi"}, {"/dev/xvdb", "20Gi"}},
	awsv1.AMIFamilyWindows2019:  {{"/dev/sda1", "50Gi"}},
	awsv1.AMIFamilyWindows2022:  {{"/dev/sda1", "50Gi"}},
	awsv1.AMIFamilyWindows2025:  {{"/dev/sda1", "50Gi"}},
}

// blockDeviceMappings converts the class's mappings, or the family's
// default (gp3, encrypted).
func blockDeviceMappings(nc *awsv1.EC2NodeClass) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	if len(nc.Spec.BlockDeviceMappings) == 0 {
		for _, d := range defaultBlockDevices[nc.AMIFamily()] {
			size := resource.MustParse(d.size)
			out = append(out, ec2types.LaunchTemplateBlockDeviceMappingRequest{
				DeviceName: aws.String(d.device),
				Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
					Encrypted: aws.Bool(true), VolumeType: ec2types.VolumeTypeGp3, VolumeSize: aws.Int32(gib(size)),
				},
			})
		}
		return out
	}
	for _, m := range nc.Spec.BlockDeviceMappings {
		if m == nil {
			continue
		}
		req := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: m.DeviceName}
		if e := m.EBS; e != nil {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination,
				Encrypted:           e.Encrypted,
				KmsKeyId:            e.KMSKeyID,
				SnapshotId:          e.SnapshotID,
			}
			if e.IOPS != nil && *e.IOPS > 0 {
				ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil && *e.Throughput > 0 {
				ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			if e.VolumeSize != nil {
				ebs.VolumeSize = aws.Int32(gib(*e.VolumeSize))
			}
			if e.VolumeType != nil {
				ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
			if e.VolumeInitializationRate != nil {
				ebs.VolumeInitializationRate = e.VolumeInitializationRate
			}
			req.Ebs = ebs
		}
		out = append(out, req)
	}
	return out
}

// gib is ceil(bytes / 2^30).
func gib(q resource.Quantity) int32 {
	const gi = 1 << 30
	return int32((q.Value() + gi - 1) / gi)
}

// metadataOptions converts the class's options, with the v1 defaults.
func metadataOptions(m *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
		HttpPutResponseHopLimit: aws.Int32(1),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
		InstanceMetadataTags:    ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
	}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.LaunchTemplateInstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*m.HTTPProtocolIPv6)
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HttpPutResponseHopLimit = aws.Int32(int32(*m.HTTPPutResponseHopLimit))
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.LaunchTemplateHttpTokensState(*m.HTTPTokens)
	}
	return out
}

// hashName names a template by the FNV-64a hash of its data and tags
// (JSON, whose map keys are sorted): equal inputs, equal names.
func hashName(data *ec2types.RequestLaunchTemplateData, tags map[string]string) (string, error) {
	b, err := json.Marshal(struct {
		Data *ec2types.RequestLaunchTemplateData
		Tags map[string]string
	}{data, tags})
	if err != nil {
		return "", fmt.Errorf("hashing launch template: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return NamePrefix + strconv.FormatUint(h.Sum64(), 10), nil
}
