package ec2

import (
	"fmt"
	"strings"
)

// instanceXML is one <item> of a reservation's instancesSet.
type instanceXML struct {
	InstanceID            string          `xml:"instanceId"`
	ImageID               string          `xml:"imageId"`
	InstanceState         stateXML        `xml:"instanceState"`
	PrivateDNSName        string          `xml:"privateDnsName"`
	DNSName               string          `xml:"dnsName"`
	Reason                string          `xml:"reason"`
	AmiLaunchIndex        int             `xml:"amiLaunchIndex"`
	InstanceType          string          `xml:"instanceType"`
	LaunchTime            string          `xml:"launchTime"`
	Placement             placementXML    `xml:"placement"`
	Monitoring            monitoringXML   `xml:"monitoring"`
	SubnetID              string          `xml:"subnetId"`
	VpcID                 string          `xml:"vpcId"`
	PrivateIPAddress      string          `xml:"privateIpAddress"`
	SourceDestCheck       bool            `xml:"sourceDestCheck"`
	GroupSet              groupSet        `xml:"groupSet"`
	StateReason           *stateReasonXML `xml:"stateReason,omitempty"`
	Architecture          string          `xml:"architecture"`
	RootDeviceType        string          `xml:"rootDeviceType"`
	RootDeviceName        string          `xml:"rootDeviceName"`
	InstanceLifecycle     string          `xml:"instanceLifecycle,omitempty"`
	SpotInstanceRequestID string          `xml:"spotInstanceRequestId,omitempty"`
	CapacityReservationID string          `xml:"capacityReservationId,omitempty"`
	VirtualizationType    string          `xml:"virtualizationType"`
	Hypervisor            string          `xml:"hypervisor"`
	TagSet                *tagSet         `xml:"tagSet,omitempty"`
	IamInstanceProfile    *profileXML     `xml:"iamInstanceProfile,omitempty"`
	NetworkInterfaces     []eniXML        `xml:"networkInterfaceSet>item"`
	EbsOptimized          bool            `xml:"ebsOptimized"`
	EnaSupport            bool            `xml:"enaSupport"`
}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type placementXML struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
	GroupName          string `xml:"groupName"`
	Tenancy            string `xml:"tenancy"`
}

type monitoringXML struct {
	State string `xml:"state"`
}

type stateReasonXML struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type profileXML struct {
	Arn string `xml:"arn"`
	ID  string `xml:"id"`
}

type eniXML struct {
	NetworkInterfaceID string        `xml:"networkInterfaceId"`
	SubnetID           string        `xml:"subnetId"`
	VpcID              string        `xml:"vpcId"`
	OwnerID            string        `xml:"ownerId"`
	Status             string        `xml:"status"`
	PrivateIPAddress   string        `xml:"privateIpAddress,omitempty"`
	PrivateDNSName     string        `xml:"privateDnsName,omitempty"`
	InterfaceType      string        `xml:"interfaceType"`
	GroupSet           groupSet      `xml:"groupSet"`
	Attachment         attachmentXML `xml:"attachment"`
}

type attachmentXML struct {
	AttachmentID        string `xml:"attachmentId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
	Status              string `xml:"status"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

// reservationXML is one <item> of reservationSet.
type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	GroupSet      groupSet      `xml:"groupSet"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

// describeInstancesResponse is DescribeInstances' result.
type describeInstancesResponse struct {
	meta
	Reservations []reservationXML `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

// stateReasonMessages are EC2's messages for the state reasons modelled.
var stateReasonMessages = map[string]string{
	"Client.UserInitiatedShutdown":   "Client.UserInitiatedShutdown: User initiated shutdown",
	"Server.SpotInstanceTermination": "Server.SpotInstanceTermination: Spot instance termination",
	"Server.ScheduledStop":           "Server.ScheduledStop: Stopped due to scheduled retirement",
	"Server.InternalError":           "Server.InternalError: Internal error on launch",
}

// instanceXMLLocked renders an instance.
func (s *Service) instanceXMLLocked(in *instance) instanceXML {
	groups := groupSet{}
	for _, id := range in.SecurityGroupIDs {
		name := ""
		if g := s.groupLocked(id); g != nil {
			name = g.Name
		}
		groups.Items = append(groups.Items, groupRef{GroupID: id, GroupName: name})
	}
	x := instanceXML{
		InstanceID:         in.ID,
		ImageID:            in.ImageID,
		InstanceState:      stateXML{Code: stateCodes[in.State], Name: string(in.State)},
		PrivateDNSName:     in.PrivateDNSName,
		InstanceType:       in.InstanceType,
		LaunchTime:         timestamp(in.LaunchTime),
		Placement:          placementXML{AvailabilityZone: in.Zone, AvailabilityZoneID: in.ZoneID, Tenancy: in.Tenancy},
		Monitoring:         monitoringXML{State: "disabled"},
		SubnetID:           in.SubnetID,
		VpcID:              in.VPCID,
		PrivateIPAddress:   in.PrivateIP,
		SourceDestCheck:    true,
		GroupSet:           groups,
		Architecture:       in.Architecture,
		RootDeviceType:     "ebs",
		RootDeviceName:     "/dev/xvda",
		VirtualizationType: "hvm",
		Hypervisor:         "xen",
		TagSet:             toTagSet(in.Tags),
		EbsOptimized:       true,
		EnaSupport:         true,
	}
	if in.State == StateTerminated || in.State == StateStopped {
		x.PrivateDNSName, x.PrivateIPAddress = "", ""
	}
	if in.StateReason != "" {
		x.StateReason = &stateReasonXML{Code: in.StateReason, Message: stateReasonMessages[in.StateReason]}
		x.Reason = fmt.Sprintf("%s (%s)", stateReasonMessages[in.StateReason], in.StateChangeTime.Format("2006-01-02 15:04:05 MST"))
	}
	if in.CapacityType == CapacityTypeSpot {
		x.InstanceLifecycle, x.SpotInstanceRequestID = "spot", in.SpotInstanceRequestID
	}
	x.CapacityReservationID = in.CapacityReservationID
	if in.IAMInstanceProfile != "" {
		arn := in.IAMInstanceProfile
		if !strings.HasPrefix(arn, "arn:") {
			arn = fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", s.cfg.AccountID, arn)
		}
		x.IamInstanceProfile = &profileXML{Arn: arn, ID: "AIPA" + strings.ToUpper(strings.TrimPrefix(in.ID, "i-"))}
	}
	if in.State != StateTerminated {
		for i, t := range in.InterfaceTypes {
			suffix := strings.TrimPrefix(in.ID, "i-")
			e := eniXML{
				NetworkInterfaceID: fmt.Sprintf("eni-%s%x", suffix[:len(suffix)-1], i),
				SubnetID:           in.SubnetID,
				VpcID:              in.VPCID,
				OwnerID:            s.cfg.AccountID,
				Status:             "in-use",
				InterfaceType:      t,
				GroupSet:           groups,
				Attachment:         attachmentXML{AttachmentID: fmt.Sprintf("eni-attach-%s%x", suffix[:len(suffix)-1], i), DeviceIndex: min(i, 1), NetworkCardIndex: i, Status: "attached", DeleteOnTermination: true},
			}
			if i == 0 {
				e.Attachment.DeviceIndex, e.PrivateIPAddress, e.PrivateDNSName = 0, in.PrivateIP, in.PrivateDNSName
			}
			x.NetworkInterfaces = append(x.NetworkInterfaces, e)
		}
	}
	return x
}
