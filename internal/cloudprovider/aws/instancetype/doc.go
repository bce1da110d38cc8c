// Package instancetype is the AWS provider's instance-type provider: the
// instance types an EC2NodeClass's nodes can have, with their labels,
// capacity, overhead and priced offerings.
//
// How: EC2's DescribeInstanceTypes (hvm, x86_64 and arm64) and
// DescribeInstanceTypeOfferings (per availability zone) are paged and
// converted by FromEC2 into the raw facts of the embedded catalog
// (internal/catalog/schema), which catalog.Compute turns into capacity and
// overhead for the class's AMI family, kubelet settings, root volume and
// instance-store policy. Why: one implementation of Karpenter's formulas
// serves the kwok provider, the simulator and AWS, and the
// oracle test checks this path against the catalog for every documented type.
// What DescribeInstanceTypes does not report (the pod-eni trunk limit, the
// documented network bandwidth) comes from the catalog by name.
//
// Offerings are built per zone of the class's status.subnets that offers the
// type, on-demand and (when SupportedUsageClasses has it) spot, priced by a
// Prices (internal/cloudprovider/aws/pricing) and marked unavailable from the
// unavailable-offerings cache (internal/cloudprovider/aws/unavailable); the
// subnets' zone IDs become the topology.k8s.aws/zone-id requirement. The EC2
// data and each class's result are cached for CacheTTL (5 minutes) on an
// injected clock, the latter keyed by the class's UID, generation and subnet
// zones and by the sequence numbers of the EC2 data, the unavailable-offerings
// cache and the prices, so a new mark or price shows at once.
//
// ToEC2 is the inverse conversion, for tests and the local AWS endpoint.
package instancetype
