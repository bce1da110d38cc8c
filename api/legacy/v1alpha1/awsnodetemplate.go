package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AWS is the provider configuration a v1alpha5 Provisioner carried inline in
// spec.provider and an AWSNodeTemplate carries in its spec.
type AWS struct {
	// AMIFamily is AL2, Bottlerocket, Ubuntu, Windows2019, Windows2022 or Custom.
	AMIFamily *string `json:"amiFamily,omitempty"`
	// Context is the EC2 Fleet context.
	Context *string `json:"context,omitempty"`
	// InstanceProfile of the nodes.
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// SubnetSelector: tags (comma-separated values), or aws-ids / aws::ids.
	SubnetSelector map[string]string `json:"subnetSelector,omitempty"`
	// SecurityGroupSelector: tags (comma-separated values), or aws-ids / aws::ids.
	SecurityGroupSelector map[string]string `json:"securityGroupSelector,omitempty"`
	// Tags put on instances and volumes.
	Tags map[string]string `json:"tags,omitempty"`
	// LaunchTemplate names a user-managed launch template (not convertible).
	LaunchTemplate `json:",inline"`
}

// LaunchTemplate is either a named launch template or the fields Karpenter
// uses to build one.
type LaunchTemplate struct {
	// LaunchTemplateName names a user-managed launch template.
	LaunchTemplateName *string `json:"launchTemplate,omitempty"`
	// MetadataOptions of the instances.
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// BlockDeviceMappings of the instances.
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
}

// MetadataOptions configures the instance metadata service.
type MetadataOptions struct {
	HTTPEndpoint            *string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        *string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit *int64  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping attaches an EBS volume at a device name.
type BlockDeviceMapping struct {
	DeviceName *string      `json:"deviceName,omitempty"`
	EBS        *BlockDevice `json:"ebs,omitempty"`
}

// BlockDevice describes an EBS volume.
type BlockDevice struct {
	DeleteOnTermination *bool              `json:"deleteOnTermination,omitempty"`
	Encrypted           *bool              `json:"encrypted,omitempty"`
	IOPS                *int64             `json:"iops,omitempty"`
	KMSKeyID            *string            `json:"kmsKeyID,omitempty"`
	SnapshotID          *string            `json:"snapshotID,omitempty"`
	Throughput          *int64             `json:"throughput,omitempty"`
	VolumeSize          *resource.Quantity `json:"volumeSize,omitempty"`
	VolumeType          *string            `json:"volumeType,omitempty"`
}

// AWSNodeTemplateSpec is the v1alpha1 AWSNodeTemplate spec.
type AWSNodeTemplateSpec struct {
	// UserData merged into the family's bootstrap.
	UserData *string `json:"userData,omitempty"`
	// AMISelector: tags, or aws::ids, aws::owners, aws::name (comma-separated).
	AMISelector map[string]string `json:"amiSelector,omitempty"`
	// DetailedMonitoring enables one-minute CloudWatch metrics.
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	AWS                `json:",inline"`
}

// AWSNodeTemplateStatus is the v1alpha1 status (dropped by conversion).
type AWSNodeTemplateStatus struct {
	Subnets        []Subnet        `json:"subnets,omitempty"`
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	AMIs           []AMI           `json:"amis,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	ID   string `json:"id"`
	Zone string `json:"zone"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// AMI is a resolved AMI.
type AMI struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// AWSNodeTemplate is the v1alpha1 AWSNodeTemplate, the predecessor of the EC2NodeClass.
//
// +kubebuilder:object:root=true
type AWSNodeTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AWSNodeTemplateSpec   `json:"spec,omitempty"`
	Status AWSNodeTemplateStatus `json:"status,omitempty"`
}

// AWSNodeTemplateList is a list of AWSNodeTemplates.
//
// +kubebuilder:object:root=true
type AWSNodeTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AWSNodeTemplate `json:"items"`
}
