// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass, the AWS-specific
// settings (AMIs, subnets, security groups, IAM role, user data, block devices,
// kubelet) of the nodes that NodePools launch on EC2. It is the storage version
// of the group; the schema and validation follow Karpenter v1 as shipped.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
