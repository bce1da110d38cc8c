package nodeclass

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// HashVersion is the value of the karpenter.k8s.aws/ec2nodeclass-hash-version
// annotation. Drift compares hashes only when versions match, so it changes
// whenever Hash would change for an unchanged spec. It differs from
// Karpenter's own versions on purpose: NodeClaims launched by Karpenter are
// not reported as drifted by a hash computed differently.
const HashVersion = "dovetail-1"

// hashedSpec is the part of the spec whose changes are static drift: a
// change means running nodes no longer match the class. Left out are the
// fields resolved dynamically, whose results (status.subnets,
// status.securityGroups, status.capacityReservations, status.amis) drift
// detection compares on their own: subnetSelectorTerms,
// securityGroupSelectorTerms, capacityReservationSelectorTerms and
// amiSelectorTerms; and role, because a new role is swapped into the owned
// instance profile that running instances already use.
type hashedSpec struct {
	AMIFamily                *string                  `json:"amiFamily,omitempty"`
	UserData                 *string                  `json:"userData,omitempty"`
	InstanceProfile          *string                  `json:"instanceProfile,omitempty"`
	Tags                     map[string]string        `json:"tags,omitempty"`
	Kubelet                  *v1.KubeletConfiguration `json:"kubelet,omitempty"`
	BlockDeviceMappings      []*v1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy      *v1.InstanceStorePolicy  `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring       *bool                    `json:"detailedMonitoring,omitempty"`
	AssociatePublicIPAddress *bool                    `json:"associatePublicIPAddress,omitempty"`
	MetadataOptions          *v1.MetadataOptions      `json:"metadataOptions,omitempty"`
	Context                  *string                  `json:"context,omitempty"`
}

// Hash returns the static hash of a class's spec (see hashedSpec for the
// fields it covers) as a decimal string. Map keys are sorted by the JSON
// encoding, so the hash is stable across processes.
func Hash(nodeClass *v1.EC2NodeClass) string {
	s := nodeClass.Spec
	b, err := json.Marshal(hashedSpec{
		AMIFamily: s.AMIFamily, UserData: s.UserData, InstanceProfile: s.InstanceProfile, Tags: s.Tags,
		Kubelet: s.Kubelet, BlockDeviceMappings: s.BlockDeviceMappings, InstanceStorePolicy: s.InstanceStorePolicy,
		DetailedMonitoring: s.DetailedMonitoring, AssociatePublicIPAddress: s.AssociatePublicIPAddress,
		MetadataOptions: s.MetadataOptions, Context: s.Context,
	})
	if err != nil {
		// Plain data types only: encoding cannot fail.
		panic(err)
	}
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 10)
}
