package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// AMIFamilyUbuntu existed in v1beta1 only; v1 converts it to AL2 with an annotation.
const AMIFamilyUbuntu = "Ubuntu"

// EC2NodeClassSpec is the v1beta1 EC2NodeClass spec.
//
// +kubebuilder:validation:XValidation:message="must specify exactly one of ['role', 'instanceProfile']",rule="(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))"
// +kubebuilder:validation:XValidation:message="amiSelectorTerms is required when amiFamily == 'Custom'",rule="self.amiFamily == 'Custom' ? has(self.amiSelectorTerms) && self.amiSelectorTerms.size() != 0 : true"
type EC2NodeClassSpec struct {
	// subnetSelectorTerms select the subnets instances launch in.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	SubnetSelectorTerms []v1.SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// securityGroupSelectorTerms select the security groups of the instances.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +required
	SecurityGroupSelectorTerms []v1.SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// associatePublicIPAddress overrides the subnet's public-IP setting.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// amiSelectorTerms select the AMIs; when empty the family's recommended AMI is used.
	// +kubebuilder:validation:MaxItems=30
	// +listType=atomic
	// +optional
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms,omitempty"`
	// amiFamily decides the bootstrap format, defaults and default AMIs.
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Ubuntu,Custom,Windows2019,Windows2022}
	// +required
	AMIFamily *string `json:"amiFamily"`
	// userData is merged into the family's bootstrap user data.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// role is the IAM role of the nodes.
	// +kubebuilder:validation:XValidation:message="role cannot be empty",rule="self != ''"
	// +kubebuilder:validation:XValidation:message="immutable field changed",rule="self == oldSelf"
	// +optional
	Role string `json:"role,omitempty"`
	// instanceProfile is an existing instance profile used as is.
	// +kubebuilder:validation:XValidation:message="instanceProfile cannot be empty",rule="self != ''"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// tags are put on instances, volumes and launch templates.
	// +kubebuilder:validation:XValidation:message="empty tag keys aren't supported",rule="self.all(k, k != '')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching kubernetes.io/cluster/",rule="self.all(k, !k.startsWith('kubernetes.io/cluster'))"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.sh/nodepool",rule="self.all(k, k != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.sh/managed-by",rule="self.all(k, k !='karpenter.sh/managed-by')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.sh/nodeclaim",rule="self.all(k, k !='karpenter.sh/nodeclaim')"
	// +kubebuilder:validation:XValidation:message="tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass",rule="self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// blockDeviceMappings of the instances.
	// +kubebuilder:validation:XValidation:message="must have only one blockDeviceMappings with rootVolume",rule="self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1"
	// +kubebuilder:validation:MaxItems:=50
	// +listType=atomic
	// +optional
	BlockDeviceMappings []*v1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// instanceStorePolicy RAID0 uses the local NVMe disks for ephemeral storage.
	// +kubebuilder:validation:Enum:={RAID0}
	// +optional
	InstanceStorePolicy *v1.InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// detailedMonitoring enables one-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// metadataOptions configure the instance metadata service.
	// +kubebuilder:default={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":2,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// context is the EC2 Fleet context.
	// +optional
	Context *string `json:"context,omitempty"`
}

// AMISelectorTerm selects AMIs by tags, id, or name and owner.
//
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'name']",rule="has(self.tags) || has(self.id) || has(self.name)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",rule="!(has(self.id) && (has(self.tags) || has(self.name) || has(self.owner)))"
type AMISelectorTerm struct {
	// tags the AMI must carry.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the AMI.
	// +kubebuilder:validation:Pattern="ami-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// owner of the AMI.
	// +optional
	Owner string `json:"owner,omitempty"`
}

// MetadataOptions configures the instance metadata service (v1beta1 defaults: hop limit 2).
type MetadataOptions struct {
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// EC2NodeClassStatus is what was resolved from the spec's selectors.
type EC2NodeClassStatus struct {
	// +listType=atomic
	// +optional
	Subnets []v1.Subnet `json:"subnets,omitempty"`
	// +listType=atomic
	// +optional
	SecurityGroups []v1.SecurityGroup `json:"securityGroups,omitempty"`
	// +listType=atomic
	// +optional
	AMIs []v1.AMI `json:"amis,omitempty"`
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EC2NodeClass is the v1beta1 EC2NodeClass.
//
// +kubebuilder:object:root=true
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
