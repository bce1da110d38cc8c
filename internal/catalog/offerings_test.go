package catalog

import (
	"hash/fnv"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// documentedSpotPrice is the derivation documented in doc.go and
// docs/catalog.md, written independently of the package's code.
func documentedSpotPrice(instanceType, zone string, onDemand float64) float64 {
	h := fnv.New64a()
	h.Write([]byte(instanceType + "/" + zone))
	discount := 3000 + h.Sum64()%4001
	return math.Round(onDemand*float64(10000-discount)/10000*1e6) / 1e6
}

func TestSpotPrices(t *testing.T) {
	prices := readPrices(t)
	its, err := Load(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		onDemand, priced := prices[it.Name]
		if !priced {
			continue
		}
		var got []Offering
		for _, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
			got = append(got,
				Offering{Zone: zone, CapacityType: "on-demand", Price: onDemand, Available: true},
				Offering{Zone: zone, CapacityType: "spot", Price: documentedSpotPrice(it.Name, zone, onDemand), Available: true},
			)
		}
		if diff := cmp.Diff(got, it.Offerings); diff != "" {
			t.Errorf("%s: offerings (-documented +got):\n%s", it.Name, diff)
		}
		for _, o := range it.Offerings {
			if o.CapacityType != "spot" {
				continue
			}
			// 30% to 70% off, give or take the rounding to 6 decimals.
			if o.Price <= 0 || o.Price >= onDemand || o.Price < onDemand*0.3-5e-7 || o.Price > onDemand*0.7+5e-7 {
				t.Errorf("%s in %s: spot %v is not 30%%-70%% below on-demand %v", it.Name, o.Zone, o.Price, onDemand)
			}
		}
	}
}

// TestSpotPricesArePinned pins a few derived prices, so that a change of the
// derivation (or of the hash) shows up as a test failure, not a silent shift
// of every benchmark's cost.
func TestSpotPricesArePinned(t *testing.T) {
	cases := map[string]struct {
		instanceType, zone string
		onDemand, want     float64
	}{
		"m5.large in a":     {"m5.large", "us-east-1a", 0.096, 0.060797},
		"m5.large in b":     {"m5.large", "us-east-1b", 0.096, 0.051014},
		"m5.large in c":     {"m5.large", "us-east-1c", 0.096, 0.041472},
		"c6g.xlarge in c":   {"c6g.xlarge", "us-east-1c", 0.136, 0.0527},
		"p4d.24xlarge in a": {"p4d.24xlarge", "us-east-1a", 21.957642, 13.288765},
		"t3.micro in b":     {"t3.micro", "us-east-1b", 0.0104, 0.004663},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := spotPrice(tc.instanceType, tc.zone, tc.onDemand); got != tc.want {
				t.Errorf("spotPrice(%s, %s, %v) = %v, want %v", tc.instanceType, tc.zone, tc.onDemand, got, tc.want)
			}
		})
	}
}

func TestFNV1aMatchesHashFNV(t *testing.T) {
	for _, s := range []string{"", "a", "m5.large/us-east-1a", "x8aedz.metal-24xl/us-east-1-bos-1a"} {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got, want := fnv1a(s), h.Sum64(); got != want {
			t.Errorf("fnv1a(%q) = %d, hash/fnv says %d", s, got, want)
		}
	}
	if fnv1a("m5.large", "/", "us-east-1a") != fnv1a("m5.large/us-east-1a") {
		t.Error("fnv1a of parts differs from fnv1a of their concatenation")
	}
}

func TestOfferingsFollowZones(t *testing.T) {
	opts := DefaultOptions()
	opts.Zones = []string{"us-east-1f", "us-east-1d"}
	it := mustLoad(t, opts)["m5.large"]
	var zones []string
	for _, o := range it.Offerings {
		zones = append(zones, o.Zone+" "+o.CapacityType)
	}
	want := []string{"us-east-1f on-demand", "us-east-1f spot", "us-east-1d on-demand", "us-east-1d spot"}
	if diff := cmp.Diff(want, zones); diff != "" {
		t.Errorf("offerings (-want +got):\n%s", diff)
	}
}

func TestUnpricedTypesHaveNoOfferings(t *testing.T) {
	its := mustLoad(t, DefaultOptions())
	for _, name := range []string{"dl2q.24xlarge", "hpc7a.96xlarge", "p5e.48xlarge", "trn2.48xlarge", "x8aedz.large"} {
		it, ok := its[name]
		if !ok {
			t.Errorf("%s not loaded", name)
			continue
		}
		if it.Offerings != nil {
			t.Errorf("%s: offerings %v, want none", name, it.Offerings)
		}
	}
}
