package v1

// Well-known labels of the karpenter.k8s.aws group: the facts of an instance
// type that NodePool requirements and pod selectors may constrain.
const (
	LabelInstanceHypervisor                = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransit       = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                  = Group + "/instance-category"
	LabelInstanceFamily                    = Group + "/instance-family"
	LabelInstanceGeneration                = Group + "/instance-generation"
	LabelInstanceLocalNVMe                 = Group + "/instance-local-nvme"
	LabelInstanceSize                      = Group + "/instance-size"
	LabelInstanceCPU                       = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer           = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMHz = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                    = Group + "/instance-memory"
	LabelInstanceEBSBandwidth              = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth          = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                   = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer           = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                  = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                 = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName           = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer   = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount          = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex            = Group + "/instance-capability-flex"
	LabelInstanceTenancy                   = Group + "/instance-tenancy"
)

// Annotations of the karpenter.k8s.aws group.
const (
	// AnnotationEC2NodeClassHash records the hash of the EC2NodeClass a NodeClaim was launched with.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion records the version of the hashing scheme.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationUbuntuCompatibility keeps what a v1beta1 Ubuntu EC2NodeClass looked like.
	AnnotationUbuntuCompatibility = "compatibility.karpenter.k8s.aws/v1beta1-ubuntu"
	// AnnotationAliasVersionCompatibility keeps a pinned alias version for v1beta1 readers.
	AnnotationAliasVersionCompatibility = "compatibility.karpenter.k8s.aws/v1-alias-version"
	// AnnotationKubeletDriftHash records the hash of the kubelet settings a NodeClaim launched with.
	AnnotationKubeletDriftHash = "compatibility.karpenter.k8s.aws/kubelet-drift-hash"
)

// EC2NodeClass conditions.
const (
	ConditionTypeAMIsReady            = "AMIsReady"
	ConditionTypeSubnetsReady         = "SubnetsReady"
	ConditionTypeSecurityGroupsReady  = "SecurityGroupsReady"
	ConditionTypeInstanceProfileReady = "InstanceProfileReady"
	ConditionTypeValidationSucceeded  = "ValidationSucceeded"
	// ConditionTypeCapacityReservationsReady says capacityReservationSelectorTerms resolved.
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypeReady                     = "Ready"
)

// Labels of nodes launched into a capacity reservation (capacity type
// reserved); other nodes do not have them.
const (
	// LabelCapacityReservationID is the reservation's ID, cr-....
	LabelCapacityReservationID = Group + "/capacity-reservation-id"
	// LabelCapacityReservationType is default or capacity-block.
	LabelCapacityReservationType = Group + "/capacity-reservation-type"
)
