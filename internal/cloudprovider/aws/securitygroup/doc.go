// Package securitygroup resolves an EC2NodeClass's
// spec.securityGroupSelectorTerms into EC2 security groups.
//
// Why a package of its own: the nodeclass status controller writes the
// result into status.securityGroups and the launch code reads the same
// answer; one cached Provider keeps EC2 traffic at one DescribeSecurityGroups
// per selector term per minute.
//
// Selector semantics follow Karpenter v1: terms are ORed, the fields inside
// one term are ANDed. All id terms share one call with a group-id filter,
// all name terms one call with a group-name filter (the GroupName, not the
// Name tag), and each tags term is a call of its own; results are unioned by
// group ID.
package securitygroup
