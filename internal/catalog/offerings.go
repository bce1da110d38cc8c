package catalog

import (
	"math"

	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Spot prices are derived, not observed: see the package documentation.
const (
	// minSpotDiscountBP and spotDiscountRangeBP bound the spot discount, in
	// basis points: 30.00% to 70.00% inclusive.
	minSpotDiscountBP   = 3000
	spotDiscountRangeBP = 4001
	// spotPriceDecimals is the precision spot prices are rounded to.
	spotPriceDecimals = 1e6
)

// offerings returns, for each zone in order, the on-demand and then the spot
// offering of an instance type, all available; none when it has no price.
func (s *settings) offerings(name string, onDemand *float64) []Offering {
	if onDemand == nil {
		return nil
	}
	out := make([]Offering, 0, 2*len(s.zones))
	for _, zone := range s.zones {
		out = append(out,
			Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: *onDemand, Available: true},
			Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: spotPrice(name, zone, *onDemand), Available: true},
		)
	}
	return out
}

// SpotPrice is the catalog's derived spot price of an instance type in a zone,
// from its on-demand price (see the package documentation). The AWS provider
// falls back to it before it has observed spot prices, so that it agrees with
// the catalog and the local AWS endpoint.
func SpotPrice(instanceType, zone string, onDemand float64) float64 {
	return spotPrice(instanceType, zone, onDemand)
}

// spotPrice derives a stable spot price from the on-demand price:
//
//	h        = FNV-1a 64-bit hash of instanceType + "/" + zone
//	discount = 3000 + h mod 4001 basis points (30.00% to 70.00%)
//	spot     = onDemand * (10000 - discount) / 10000, rounded to 6 decimals
func spotPrice(instanceType, zone string, onDemand float64) float64 {
	discount := minSpotDiscountBP + fnv1a(instanceType, "/", zone)%spotDiscountRangeBP
	return math.Round(onDemand*float64(10000-discount)/10000*spotPriceDecimals) / spotPriceDecimals
}

// fnv1a is the 64-bit FNV-1a hash of the concatenated strings. It is
// hash/fnv's New64a, inlined so that hashing allocates nothing.
func fnv1a(parts ...string) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= prime64
		}
	}
	return h
}
