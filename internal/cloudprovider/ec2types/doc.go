// Package ec2types turns the embedded EC2 catalog (internal/catalog) into the
// cloud-provider model of instance types (cloudprovider.InstanceType) that the
// scheduling simulator packs pods onto.
//
// Why a package of its own: the kwok provider launches EC2-shaped nodes from
// these types, and the simulator's "ec2-mix" benchmark needs the very same
// types without a provider, so the conversion lives in one small place with
// one entry point, FromCatalog.
//
// Each catalog label becomes a single-value In requirement. The two labels
// that depend on the offering, topology.kubernetes.io/zone and
// karpenter.sh/capacity-type, become multi-value In requirements over the
// type's available offerings (In with no values, which nothing satisfies,
// for the few types without a price). Every other key of
// catalog.WellKnownLabels that the type lacks becomes DoesNotExist, so that a
// NodePool requirement such as karpenter.k8s.aws/instance-gpu-count Exists or
// Gt 0 rules the type out instead of ignoring the key.
//
// The AWS provider adds the topology.k8s.aws/zone-id requirement
// (ZoneIDRequirement), from the zone IDs of its EC2NodeClass's subnets.
//
// The conversion allocates every value afresh; callers build the list once
// and share the pointers read-only (InstanceType caches its allocatable).
package ec2types
