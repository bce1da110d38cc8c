// Package conversion converts NodePools, NodeClaims and EC2NodeClasses between
// the API versions Dovetail serves: karpenter.sh v1beta1 <-> v1 and
// karpenter.k8s.aws v1beta1 <-> v1. v1 is the hub (the storage version); each
// function converts one object between the hub and its v1beta1 spoke.
//
// The functions are pure: they read nothing but their arguments (and, for a
// NodeClaim, the owning NodePool through an injected NodePoolGetter), never
// modify their input, and keep every value that has no field in the other
// version in a compatibility annotation, so that v1 -> v1beta1 -> v1 and
// v1beta1 -> v1 -> v1beta1 give back the object they started from. The
// conversion webhook calls them through Converter.ConvertJSON; the offline
// converter (package manifest) calls them on typed objects. The field-by-field
// mapping, and what is dropped and why, is written down in docs/migration.md.
package conversion
