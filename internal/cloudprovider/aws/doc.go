// Package aws is the cloud provider that launches EC2 instances for
// NodeClaims whose NodeClass is an EC2NodeClass (karpenter.k8s.aws), with
// aws-sdk-go-v2, as Karpenter's AWS provider does.
//
// The EC2NodeClass controller (./nodeclass) resolves a class's selectors
// into its status (subnets, security groups, AMIs, instance profile) and
// readiness; this package launches from that status:
//
//   - GetInstanceTypes: the types EC2 offers in the zones of the class's
//     subnets, sized for the class's AMI family and kubelet settings, priced
//     on-demand and spot, with the offerings EC2 recently had no capacity
//     for marked unavailable (./instancetype, ./pricing, ./unavailable).
//   - Create: picks the capacity type (spot when the claim allows it and a
//     spot offering is available, else on-demand), orders the claim's
//     compatible types by their cheapest offering and keeps 60, resolves
//     their launch templates (./launchtemplate, user data from ./userdata)
//     and makes one CreateFleet call (./instance). Every offering EC2 turns
//     down for capacity is marked unavailable for three minutes, so the next
//     simulation avoids it. A launch that finds its templates gone
//     recreates them and retries once.
//   - Get, List, Delete: DescribeInstances and TerminateInstances, scoped to
//     the cluster by tags; an instance launched moments ago that EC2 does
//     not describe yet is not taken for gone.
//   - IsDrifted: the class's static hash (annotation
//     karpenter.k8s.aws/ec2nodeclass-hash) changed (NodeClassDrift), or the
//     instance's AMI, subnet or security groups are no longer among those
//     the class resolves (AMIDrift, SubnetDrift, SecurityGroupDrift).
package aws
