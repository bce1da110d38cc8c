// Package catalog is Dovetail's embedded catalog of EC2 instance types: for
// every type Karpenter documents, the labels, capacity, overhead, allocatable
// resources and priced offerings that a scheduler needs, computed for a given
// AMI family and kubelet configuration.
//
// Why: the kwok provider, the simulator's benchmarks and the `simulate` command
// need realistic EC2 shapes and prices without calling AWS. Keeping raw facts in
// the catalog and the formulas in code lets one catalog serve every AMI family
// and kubelet override, and keeps it checkable against the values Karpenter
// documents.
//
// # Data
//
// The facts come from hack/data/ec2 (see its README for provenance: Karpenter
// v1.14.1's instance-type reference and VPC limits, and its static us-east-1
// on-demand prices). `go generate ./internal/catalog/...` runs ./gen, which
// validates them and writes zz_generated.catalog.json; this package embeds that
// file and decodes it once. Load then computes everything else from Options, so
// repeated calls never share mutable values. Compute applies the same formulas
// to raw facts from elsewhere (the AWS provider converts EC2's
// DescribeInstanceTypes to schema.InstanceType), so there is one implementation
// of them.
//
// # Formulas
//
// Labels, capacity, overhead and allocatable follow hack/data/ec2/README.md,
// which describes Karpenter v1.14:
//
//   - memory: EC2's memory, less 64MiB on arm64, less the VM overhead
//     (ceil of VMMemoryOverheadPercent of it, in MiB);
//   - pods: kubelet maxPods, else ENI-limited pods (110 on Windows), capped
//     by podsPerCore except on Bottlerocket;
//   - kube-reserved: a share of each CPU range, 11MiB per pod plus 255MiB of
//     memory, 1Gi of ephemeral storage, each replaceable by kubelet settings;
//   - eviction threshold: 100Mi of memory and 10% of ephemeral storage unless
//     kubelet evictionHard says otherwise.
//
// With DefaultOptions the allocatable cpu, memory and ephemeral-storage of every
// type equal the values Karpenter documents, which the tests check.
//
// # Offerings and spot prices
//
// Each priced type is offered on-demand and spot in every configured zone, all
// available. On-demand prices are the static us-east-1 table, whatever the
// region (Karpenter falls back to that table too). There are no spot prices in
// the data, so they are derived, deterministically on every machine:
//
//	h        = FNV-1a 64-bit hash of "<instance type>/<zone>"
//	discount = 3000 + h mod 4001 basis points, i.e. 30.00% to 70.00%
//	spot     = on-demand * (10000 - discount) / 10000, rounded to 6 decimals
//
// Types without an on-demand price (18 of them) have no offerings.
package catalog
