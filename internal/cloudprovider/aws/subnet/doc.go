// Package subnet resolves an EC2NodeClass's spec.subnetSelectorTerms into
// EC2 subnets and picks, per zone, the subnet a launch should use.
//
// Why a package of its own: the nodeclass status controller writes the
// resolved subnets into status.subnets, and the launch code needs the same
// answer (with the live AvailableIpAddressCount) to choose one subnet per
// zone; both go through one cached Provider so that EC2 sees one
// DescribeSubnets per selector term per minute, however many callers ask.
//
// Selector semantics follow Karpenter v1: terms are ORed, the fields inside
// one term are ANDed. Every term becomes one DescribeSubnets call, except
// that all id terms are collapsed into a single call with one subnet-id
// filter; the results are unioned by subnet ID.
package subnet
