package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AMI families.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyCustom       = "Custom"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
)

// EC2NodeClassSpec configures the EC2 instances of the NodePools that reference it.
//
// +kubebuilder:validation:XValidation:message="must specify exactly one of ['role', 'instanceProfile']",rule="(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))"
// +kubebuilder:validation:XValidation:message="amiFamily must be specified if amiSelectorTerms does not contain an alias",rule="self.amiSelectorTerms.exists(x, has(x.alias)) || has(self.amiFamily)"
// +kubebuilder:validation:XValidation:message="amiFamily must match the family of the alias, or be Custom",rule="!has(self.amiFamily) || self.amiFamily == 'Custom' || self.amiSelectorTerms.all(x, !has(x.alias) || x.alias.find('^[^@]+') == self.amiFamily.lowerAscii())"
type EC2NodeClassSpec struct {
	// subnetSelectorTerms select the subnets (and so the zones) instances launch in.
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms cannot be empty",rule="self.size() != 0"
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// securityGroupSelectorTerms select the security groups of the instances.
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms cannot be empty",rule="self.size() != 0"
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// capacityReservationSelectorTerms select capacity reservations to launch into.
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// associatePublicIPAddress overrides the subnet's public-IP setting.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// amiSelectorTerms select the AMIs instances boot from.
	// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",rule="!(self.exists(x, has(x.alias)) && self.size() != 1)"
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// amiFamily decides the bootstrap format and defaults; inferred from an alias.
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Custom,Windows2019,Windows2022,Windows2025}
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// userData is merged into the family's bootstrap user data.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// role is the IAM role of the nodes; Dovetail manages an instance profile for it.
	// +kubebuilder:validation:XValidation:message="role cannot be empty",rule="self != ''"
	// +optional
	Role string `json:"role,omitempty"`
	// instanceProfile is an existing instance profile used as is.
	// +kubebuilder:validation:XValidation:message="instanceProfile cannot be empty",rule="self != ''"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// tags are put on instances, volumes and launch templates.
	// +kubebuilder:validation:XValidation:message="empty tag keys aren't supported",rule="self.all(k, k != '')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching eks:eks-cluster-name",rule="self.all(k, k !='eks:eks-cluster-name')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching kubernetes.io/cluster/",rule="self.all(k, !k.startsWith('kubernetes.io/cluster'))"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.sh/nodepool",rule="self.all(k, k != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.sh/nodeclaim",rule="self.all(k, k !='karpenter.sh/nodeclaim')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass",rule="self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// kubelet settings of the nodes.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// blockDeviceMappings of the instances; the family default when empty.
	// +kubebuilder:validation:XValidation:message="must have only one blockDeviceMappings with rootVolume",rule="self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1"
	// +kubebuilder:validation:MaxItems:=50
	// +listType=atomic
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// instanceStorePolicy RAID0 puts the kubelet and containerd on the local NVMe
	// disks and sizes ephemeral storage from them.
	// +kubebuilder:validation:Enum:={RAID0}
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// detailedMonitoring enables one-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// metadataOptions configure the instance metadata service.
	// +kubebuilder:default={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// context is the EC2 Fleet context (reserved capacity arrangements).
	// +optional
	Context *string `json:"context,omitempty"`
}

// InstanceStorePolicy says how local instance-store disks are used.
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 stripes the local NVMe disks into one volume.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// Subnet is a resolved subnet.
type Subnet struct {
	// id of the subnet.
	// +required
	ID string `json:"id"`
	// zone of the subnet.
	// +required
	Zone string `json:"zone"`
	// zoneID of the subnet.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// id of the security group.
	// +required
	ID string `json:"id"`
	// name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationType is the kind of a capacity reservation.
// +kubebuilder:validation:Enum:={default,capacity-block}
type CapacityReservationType string

// Capacity reservation types.
const (
	// CapacityReservationTypeDefault is an On-Demand Capacity Reservation.
	CapacityReservationTypeDefault CapacityReservationType = "default"
	// CapacityReservationTypeCapacityBlock is a Capacity Block for ML,
	// which ends at a fixed time.
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState says whether a reservation can still be launched into.
// +kubebuilder:validation:Enum:={active,expiring}
type CapacityReservationState string

// Capacity reservation states.
const (
	// CapacityReservationStateActive can be launched into.
	CapacityReservationStateActive CapacityReservationState = "active"
	// CapacityReservationStateExpiring is a capacity block within 40 minutes
	// of its end time: EC2 will reclaim its instances.
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)

// CapacityReservation is a resolved capacity reservation nodes may launch into.
type CapacityReservation struct {
	// availabilityZone the reservation is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// endTime is when the reservation ends; unset for reservations without an end.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// id of the reservation.
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// instanceMatchCriteria is open or targeted.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// instanceType the reservation is for.
	// +required
	InstanceType string `json:"instanceType"`
	// ownerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// reservationType is default (On-Demand Capacity Reservation) or capacity-block.
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// state is active, or expiring for a capacity block near its end time.
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
	// availableInstanceCount is how many more instances the reservation
	// took when it was last resolved. Karpenter keeps this count in memory
	// only; Dovetail also shows it so that users can see why a reservation
	// is not filled.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	AvailableInstanceCount *int32 `json:"availableInstanceCount,omitempty"`
}

// AMI is a resolved AMI and the instance types it suits.
type AMI struct {
	// id of the AMI.
	// +required
	ID string `json:"id"`
	// name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// deprecated is true once the AMI is past its deprecation time.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// requirements an instance type must meet to use this AMI.
	// +listType=atomic
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// EC2NodeClassStatus is what Dovetail resolved from the spec's selectors.
type EC2NodeClassStatus struct {
	// subnets resolved from subnetSelectorTerms.
	// +listType=atomic
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// securityGroups resolved from securityGroupSelectorTerms.
	// +listType=atomic
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// capacityReservations resolved from capacityReservationSelectorTerms.
	// +listType=atomic
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// amis resolved from amiSelectorTerms.
	// +listType=atomic
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// instanceProfile used by the nodes.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// conditions: Ready and the readiness of each resolved part.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EC2NodeClass configures how the nodes of the NodePools that reference it are
// launched on EC2.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EC2NodeClassSpec   `json:"spec"`
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}
