// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to the
// instance types a cloud provider offers a NodePool, so that scheduling,
// consolidation and the launch itself see the overlaid prices and
// extended-resource capacity.
//
// The pure part, Parse, Evaluate and Apply, works on parsed overlays and
// instance types and never reads the cluster:
//
//   - An overlay matches an offering of an instance type when every one of
//     its requirements admits the offering: keys the instance type carries
//     (its labels), the offering's zone, capacity type and capacity
//     reservation, the NodePool's name (karpenter.sh/nodepool) and the labels
//     of the NodePool's template. A key none of these define matches only an
//     operator that a missing label satisfies (NotIn, DoesNotExist).
//   - Overlays apply in order of weight, highest first, and by name, the
//     name that sorts last first, for equal weights. An offering's price is
//     set by the first overlay that changes the price of an offering it
//     matches (price replaces it, priceAdjustment changes the original
//     price, never below zero); an extended resource is set by the first
//     overlay that names it, on every instance type with a matching offering.
//   - Two overlays of the same weight that would set the same offering's
//     price or the same resource of an instance type conflict. The later
//     of them in the order above is left out entirely (not applied anywhere,
//     as Karpenter does) and Evaluate reports it with the overlay it
//     conflicts with.
//
// Apply never modifies the instance types it is given: providers share them
// between callers and cache them. A type an overlay changes is a copy with
// its own offerings or capacity; the others are returned as they are.
//
// The impure part is CloudProvider, a decorator of another provider: its
// GetInstanceTypes applies the cluster's NodeOverlays (read from the
// controller-runtime cache) to what the provider returns, leaving out the
// overlays the nodeoverlay controller marked ValidationSucceeded=False, and
// its Create hands the same overlays to the provider through the context
// (see InstanceTypes), so that the provider launches by the overlaid
// prices and reports the overlaid capacity, and annotates NodeClaims whose
// instance types had a price overlaid with karpenter.sh/price-overlay-applied.
package overlay
