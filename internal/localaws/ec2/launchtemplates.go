package ec2

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// LaunchTemplate is a stored launch template. Only version 1 exists: the
// service does not model CreateLaunchTemplateVersion.
type LaunchTemplate struct {
	// ID is e.g. lt-0123456789abcdef0.
	ID string
	// Name is the template name, unique in the account.
	Name string
	// CreateTime is when the template was created, by the clock.
	CreateTime time.Time
	// Tags are the template's own tags (TagSpecification resource type
	// launch-template, and CreateTags).
	Tags map[string]string
	// Data is the template's content.
	Data LaunchTemplateData
}

// LaunchTemplateData is the content of a launch template: the fields a
// launch reads, typed, and every LaunchTemplateData.* parameter as sent.
type LaunchTemplateData struct {
	// ImageID is the AMI instances launch from unless an override names one.
	ImageID string
	// InstanceType is the template's instance type, if any.
	InstanceType string
	// UserData is the decoded user data.
	UserData []byte
	// IAMInstanceProfile is the instance profile's name or, failing that, ARN.
	IAMInstanceProfile string
	// SecurityGroupIDs are LaunchTemplateData.SecurityGroupId.N.
	SecurityGroupIDs []string
	// NetworkInterfaces are LaunchTemplateData.NetworkInterface.N.
	NetworkInterfaces []NetworkInterface
	// BlockDeviceMappings are LaunchTemplateData.BlockDeviceMapping.N.
	BlockDeviceMappings []BlockDeviceMapping
	// MetadataOptions are the instance metadata settings, as sent.
	MetadataOptions map[string]string
	// Monitoring is Monitoring.Enabled (detailed monitoring).
	Monitoring bool
	// TagSpecifications tag the resources a launch creates (instance,
	// volume, network-interface, spot-instances-request).
	TagSpecifications []TagSpecification
	// Params is every LaunchTemplateData.* parameter as sent, keyed by its
	// name below LaunchTemplateData (e.g. "Placement.Tenancy").
	Params map[string]string
}

// NetworkInterface is one network interface of a launch template.
type NetworkInterface struct {
	// DeviceIndex is the interface's device index.
	DeviceIndex int64
	// NetworkCardIndex is the network card the interface is on.
	NetworkCardIndex int64
	// InterfaceType is "", "interface", "efa" or "efa-only".
	InterfaceType string
	// Groups are the interface's security group ids.
	Groups []string
	// AssociatePublicIPAddress is set when the template sets it.
	AssociatePublicIPAddress *bool
}

// BlockDeviceMapping is one block device of a launch template.
type BlockDeviceMapping struct {
	// DeviceName is e.g. /dev/xvda.
	DeviceName string
	// EBS holds the Ebs.* settings as sent (VolumeSize, VolumeType,
	// Encrypted, DeleteOnTermination, Iops, Throughput, KmsKeyId, SnapshotId).
	EBS map[string]string
}

// TagSpecification tags one resource type.
type TagSpecification struct {
	// ResourceType is e.g. instance, volume, network-interface.
	ResourceType string
	// Tags are the tags to apply.
	Tags map[string]string
}

// maxUserData is EC2's limit on raw (decoded) user data.
const maxUserData = 16 * 1024

// templateNamePattern is EC2's rule for launch template names.
var templateNamePattern = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

// LaunchTemplates returns every launch template in creation order.
func (s *Service) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LaunchTemplate, len(s.st.lts))
	for i, lt := range s.st.lts {
		out[i] = lt.public()
	}
	return out
}

// launchTemplate is a stored template.
type launchTemplate struct {
	LaunchTemplate
}

// public deep-copies a template out of the state.
func (lt *launchTemplate) public() LaunchTemplate {
	out := lt.LaunchTemplate
	out.Tags = cloneTags(lt.Tags)
	d := &out.Data
	d.UserData = slices.Clone(d.UserData)
	d.SecurityGroupIDs = slices.Clone(d.SecurityGroupIDs)
	d.NetworkInterfaces = slices.Clone(d.NetworkInterfaces)
	for i := range d.NetworkInterfaces {
		d.NetworkInterfaces[i].Groups = slices.Clone(d.NetworkInterfaces[i].Groups)
	}
	d.BlockDeviceMappings = slices.Clone(d.BlockDeviceMappings)
	for i := range d.BlockDeviceMappings {
		d.BlockDeviceMappings[i].EBS = cloneTags(d.BlockDeviceMappings[i].EBS)
	}
	d.MetadataOptions = cloneTags(d.MetadataOptions)
	d.TagSpecifications = slices.Clone(d.TagSpecifications)
	for i := range d.TagSpecifications {
		d.TagSpecifications[i].Tags = cloneTags(d.TagSpecifications[i].Tags)
	}
	d.Params = cloneTags(d.Params)
	return out
}

// securityGroups returns the template's security group ids: the
// SecurityGroupIds, then every interface's Groups, each once.
func (d *LaunchTemplateData) securityGroups() []string {
	out := slices.Clone(d.SecurityGroupIDs)
	for _, ni := range d.NetworkInterfaces {
		for _, g := range ni.Groups {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// tagsFor returns the template's tags for a resource type.
func (d *LaunchTemplateData) tagsFor(resourceType string) map[string]string {
	out := map[string]string{}
	for _, ts := range d.TagSpecifications {
		if ts.ResourceType == resourceType {
			for k, v := range ts.Tags {
				out[k] = v
			}
		}
	}
	return out
}

// parseTemplateData reads LaunchTemplateData.*.
func parseTemplateData(p params) (LaunchTemplateData, error) {
	d := LaunchTemplateData{Params: map[string]string{}}
	for k, vs := range p.v {
		if rest, ok := strings.CutPrefix(k, p.prefix); ok && len(vs) > 0 {
			d.Params[rest] = vs[0]
		}
	}
	d.ImageID = p.get("ImageId")
	d.InstanceType = p.get("InstanceType")
	if ud, ok := p.str("UserData"); ok {
		raw, err := base64.StdEncoding.DecodeString(ud)
		if err != nil {
			return d, apiErrorf(400, "InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(raw) > maxUserData {
			return d, apiErrorf(400, "InvalidParameterValue", "User data is limited to %d bytes", maxUserData)
		}
		d.UserData = raw
	}
	d.IAMInstanceProfile = p.get("IamInstanceProfile.Name")
	if d.IAMInstanceProfile == "" {
		d.IAMInstanceProfile = p.get("IamInstanceProfile.Arn")
	}
	var err error
	if d.SecurityGroupIDs, err = p.strings("SecurityGroupId"); err != nil {
		return d, err
	}
	nis, err := p.members("NetworkInterface")
	if err != nil {
		return d, err
	}
	for _, m := range nis {
		var ni NetworkInterface
		if ni.DeviceIndex, _, err = m.int("DeviceIndex"); err != nil {
			return d, err
		}
		if ni.NetworkCardIndex, _, err = m.int("NetworkCardIndex"); err != nil {
			return d, err
		}
		ni.InterfaceType = m.get("InterfaceType")
		if ni.Groups, err = m.strings("SecurityGroupId"); err != nil {
			return d, err
		}
		if b, ok, err := m.bool("AssociatePublicIpAddress"); err != nil {
			return d, err
		} else if ok {
			ni.AssociatePublicIPAddress = &b
		}
		d.NetworkInterfaces = append(d.NetworkInterfaces, ni)
	}
	bdms, err := p.members("BlockDeviceMapping")
	if err != nil {
		return d, err
	}
	for _, m := range bdms {
		bdm := BlockDeviceMapping{DeviceName: m.get("DeviceName")}
		for _, f := range []string{"VolumeSize", "VolumeType", "Encrypted", "DeleteOnTermination", "Iops", "Throughput", "KmsKeyId", "SnapshotId"} {
			if v, ok := m.str("Ebs." + f); ok {
				if bdm.EBS == nil {
					bdm.EBS = map[string]string{}
				}
				bdm.EBS[f] = v
			}
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, bdm)
	}
	for _, f := range []string{"HttpEndpoint", "HttpProtocolIpv6", "HttpPutResponseHopLimit", "HttpTokens", "InstanceMetadataTags"} {
		if v, ok := p.str("MetadataOptions." + f); ok {
			if d.MetadataOptions == nil {
				d.MetadataOptions = map[string]string{}
			}
			d.MetadataOptions[f] = v
		}
	}
	if d.Monitoring, _, err = p.bool("Monitoring.Enabled"); err != nil {
		return d, err
	}
	specs, err := p.tagSpecs("TagSpecification")
	if err != nil {
		return d, err
	}
	for _, ts := range specs {
		d.TagSpecifications = append(d.TagSpecifications, TagSpecification{ResourceType: ts.ResourceType, Tags: tagMap(ts.Tags)})
	}
	return d, nil
}

// launchTemplateXML is a launchTemplate element or <item>.
type launchTemplateXML struct {
	LaunchTemplateID     string  `xml:"launchTemplateId"`
	LaunchTemplateName   string  `xml:"launchTemplateName"`
	CreateTime           string  `xml:"createTime"`
	CreatedBy            string  `xml:"createdBy"`
	DefaultVersionNumber int64   `xml:"defaultVersionNumber"`
	LatestVersionNumber  int64   `xml:"latestVersionNumber"`
	TagSet               *tagSet `xml:"tagSet,omitempty"`
}

// xml renders a template.
func (s *Service) templateXML(lt *launchTemplate) launchTemplateXML {
	return launchTemplateXML{
		LaunchTemplateID:     lt.ID,
		LaunchTemplateName:   lt.Name,
		CreateTime:           timestamp(lt.CreateTime),
		CreatedBy:            fmt.Sprintf("arn:aws:iam::%s:root", s.cfg.AccountID),
		DefaultVersionNumber: 1,
		LatestVersionNumber:  1,
		TagSet:               toTagSet(lt.Tags),
	}
}

// launchTemplateResponse is CreateLaunchTemplate's and
// DeleteLaunchTemplate's result.
type launchTemplateResponse struct {
	meta
	LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
}

// createLaunchTemplate serves CreateLaunchTemplate.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateLaunchTemplate.html
func (s *Service) createLaunchTemplate(p params) (response, error) {
	name, err := p.required("LaunchTemplateName")
	if err != nil {
		return nil, err
	}
	if !templateNamePattern.MatchString(name) {
		return nil, apiErrorf(400, "InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	if !p.has("LaunchTemplateData") {
		return nil, errMissing("LaunchTemplateData")
	}
	data, err := parseTemplateData(p.sub("LaunchTemplateData"))
	if err != nil {
		return nil, err
	}
	specs, err := p.tagSpecs("TagSpecification")
	if err != nil {
		return nil, err
	}
	tags := map[string]string{}
	for _, ts := range specs {
		if ts.ResourceType != "launch-template" {
			return nil, apiErrorf(400, "InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", ts.ResourceType)
		}
		for k, v := range tagMap(ts.Tags) {
			tags[k] = v
		}
	}
	if s.templateByNameLocked(name) != nil {
		return nil, apiErrorf(400, "InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	lt := &launchTemplate{LaunchTemplate{ID: s.newIDLocked("lt"), Name: name, CreateTime: s.now(), Tags: tags, Data: data}}
	if len(tags) == 0 {
		lt.Tags = nil
	}
	s.st.lts = append(s.st.lts, lt)
	return &launchTemplateResponse{LaunchTemplate: s.templateXML(lt)}, nil
}

// describeLaunchTemplatesResponse is DescribeLaunchTemplates' result.
type describeLaunchTemplatesResponse struct {
	meta
	LaunchTemplates []launchTemplateXML `xml:"launchTemplates>item"`
	NextToken       string              `xml:"nextToken,omitempty"`
}

// templateFilters are the DescribeLaunchTemplates filters modelled.
var templateFilters = fieldFuncs[*launchTemplate]{
	"launch-template-name": func(lt *launchTemplate) []string { return one(lt.Name) },
	"create-time":          func(lt *launchTemplate) []string { return one(timestamp(lt.CreateTime)) },
}

// errTemplateNotFound is EC2's answer to an unknown template name or id.
func errTemplateNotFound(byID bool) error {
	code := "InvalidLaunchTemplateName.NotFoundException"
	if byID {
		code = "InvalidLaunchTemplateId.NotFound"
	}
	return apiErrorf(400, code, "At least one of the launch templates specified in the request does not exist.")
}

// describeLaunchTemplates serves DescribeLaunchTemplates.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeLaunchTemplates.html
func (s *Service) describeLaunchTemplates(p params) (response, error) {
	names, err := p.strings("LaunchTemplateName")
	if err != nil {
		return nil, err
	}
	ids, err := p.strings("LaunchTemplateId")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, templateFilters, true)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeLaunchTemplates", 1, 200)
	if err != nil {
		return nil, err
	}
	found := s.st.lts
	if len(names) > 0 || len(ids) > 0 {
		found = nil
		for _, id := range ids {
			lt := s.templateByIDLocked(id)
			if lt == nil {
				return nil, errTemplateNotFound(true)
			}
			found = append(found, lt)
		}
		for _, n := range names {
			lt := s.templateByNameLocked(n)
			if lt == nil {
				return nil, errTemplateNotFound(false)
			}
			if !slices.Contains(found, lt) {
				found = append(found, lt)
			}
		}
	}
	var sel []*launchTemplate
	for _, lt := range found {
		if matches(lt, fs, templateFilters, lt.Tags) {
			sel = append(sel, lt)
		}
	}
	start, end, next := s.window(pr, "DescribeLaunchTemplates", len(sel))
	out := &describeLaunchTemplatesResponse{NextToken: next}
	for _, lt := range sel[start:end] {
		out.LaunchTemplates = append(out.LaunchTemplates, s.templateXML(lt))
	}
	return out, nil
}

// deleteLaunchTemplate serves DeleteLaunchTemplate.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteLaunchTemplate.html
func (s *Service) deleteLaunchTemplate(p params) (response, error) {
	id, name := p.get("LaunchTemplateId"), p.get("LaunchTemplateName")
	var lt *launchTemplate
	switch {
	case id != "":
		if lt = s.templateByIDLocked(id); lt == nil {
			return nil, errTemplateNotFound(true)
		}
	case name != "":
		if lt = s.templateByNameLocked(name); lt == nil {
			return nil, errTemplateNotFound(false)
		}
	default:
		return nil, errMissing("LaunchTemplateId or LaunchTemplateName")
	}
	s.st.lts = slices.DeleteFunc(s.st.lts, func(o *launchTemplate) bool { return o == lt })
	return &launchTemplateResponse{LaunchTemplate: s.templateXML(lt)}, nil
}

// templateByNameLocked finds a template by name.
func (s *Service) templateByNameLocked(name string) *launchTemplate {
	for _, lt := range s.st.lts {
		if lt.Name == name {
			return lt
		}
	}
	return nil
}

// templateByIDLocked finds a template by id.
func (s *Service) templateByIDLocked(id string) *launchTemplate {
	for _, lt := range s.st.lts {
		if lt.ID == id {
			return lt
		}
	}
	return nil
}
