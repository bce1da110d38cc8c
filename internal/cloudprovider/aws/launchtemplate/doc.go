// Package launchtemplate resolves and keeps the EC2 launch templates that
// instances are launched from.
//
// # Resolve
//
// For one launch, Resolve maps each candidate instance type to the first
// AMI of the EC2NodeClass's status.amis whose requirements it meets (arch,
// GPU or accelerator variant, Windows build), groups the types of each AMI
// by their max-pods value (the kubelet's maxPods, or the type's pods
// capacity), and builds one template per group: the AMI, the user data of
// the class's AMI family (internal/cloudprovider/aws/userdata) carrying the
// claim's labels, taints and startup taints and the group's max pods, the
// instance profile, the security groups inside the primary network
// interface, the block device mappings (the class's, else the family's
// default), the metadata options (InstanceMetadataTags disabled), detailed
// monitoring and the tags. A template's name is karpenter.k8s.aws/<hash>,
// the hash covering everything that goes into it, so a change to any input
// makes a new template and an unchanged one is reused.
//
// # Ensure
//
// Ensure makes sure each resolved template exists: a template used within
// the last CacheTTL is taken as existing; otherwise DescribeLaunchTemplates
// by name finds it, or CreateLaunchTemplate makes it (a concurrent creator
// winning the race is fine). Invalidate forgets templates a launch found
// missing, so the next launch recreates them.
//
// # Cleanup
//
// DeleteForNodeClass deletes every template tagged for the cluster and the
// class (the class's finalizer calls it), and DeleteUnused deletes the
// cluster's templates that no launch used for UnusedTTL (garbage collection
// after classes change or a leader restarts).
package launchtemplate
