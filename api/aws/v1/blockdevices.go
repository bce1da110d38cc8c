package v1

import "k8s.io/apimachinery/pkg/api/resource"

// BlockDeviceMapping attaches an EBS volume to the instance at a device name.
type BlockDeviceMapping struct {
	// deviceName is the device the volume is exposed as, for example /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// ebs describes the volume.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// rootVolume marks the volume that holds the root filesystem and sizes the
	// node's ephemeral storage. At most one mapping may set it.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume.
//
// +kubebuilder:validation:XValidation:message="snapshotID or volumeSize must be defined",rule="has(self.snapshotID) || has(self.volumeSize)"
// +kubebuilder:validation:XValidation:message="volumeInitializationRate must be set with snapshotID",rule="!has(self.volumeInitializationRate) || has(self.snapshotID)"
type BlockDevice struct {
	// deleteOnTermination deletes the volume with the instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// iops of io1, io2 and gp3 volumes.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// kmsKeyID is the KMS key that encrypts the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// snapshotID the volume is created from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// throughput of gp3 volumes, in MiB/s.
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// volumeInitializationRate of a volume created from a snapshot, in MiB/s.
	// +kubebuilder:validation:Minimum:=100
	// +kubebuilder:validation:Maximum:=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// volumeSize, for example 20Gi: 1-59000Gi, 1-64000G, 1-58Ti or 1-64T.
	// +kubebuilder:validation:Pattern:="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-4][0-9]|5[0-8])Ti|([1-9]|[1-5][0-9]|6[0-4])T)$"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type:=string
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// volumeType of the volume.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// MetadataOptions configures the instance metadata service of the nodes.
type MetadataOptions struct {
	// httpEndpoint enables or disables the metadata service.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// httpProtocolIPv6 enables the IPv6 endpoint of the metadata service.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// httpPutResponseHopLimit is the hop limit of metadata PUT responses.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// httpTokens requires (IMDSv2) or allows session tokens.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}
