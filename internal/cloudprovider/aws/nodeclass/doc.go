// Package nodeclass is the EC2NodeClass controller. Every minute, and on
// every change, it resolves a class's selectors and references against AWS
// and writes the answer into its status: status.subnets, securityGroups,
// amis and instanceProfile, and the conditions SubnetsReady,
// SecurityGroupsReady, AMIsReady, InstanceProfileReady, ValidationSucceeded
// and Ready (their AND). NodePool readiness mirrors Ready, so a NodePool
// whose class is not Ready launches nothing; each failing condition names the
// spec field at fault.
//
// It also keeps the static hash annotations (karpenter.k8s.aws/ec2nodeclass-hash
// and -hash-version, see Hash) that drift detection compares with the
// NodeClaims launched from the class, and it owns the class's finalizer
// karpenter.k8s.aws/termination: a deleted class waits until no NodeClaim
// refers to it, then its launch templates and its owned instance profile are
// deleted before the finalizer goes.
//
// Why its dependencies are injected: the AWS lookups live in the subnet,
// securitygroup, ami and instanceprofile packages (shared with the launch
// code), user-data parsing and launch-template cleanup belong to other
// packages, and tests drive the controller with a fake clock.
package nodeclass
