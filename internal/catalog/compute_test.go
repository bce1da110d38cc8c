package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestComputeAgreesWithLoad checks that Compute on the embedded facts gives
// what Load gives, for every family and a few kubelet settings: Load is
// Compute on the embedded catalog.
func TestComputeAgreesWithLoad(t *testing.T) {
	facts, err := Facts()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(o *Options){
		"defaults":     func(*Options) {},
		"AL2":          func(o *Options) { o.AMIFamily = AMIFamilyAL2 },
		"Bottlerocket": func(o *Options) { o.AMIFamily = AMIFamilyBottlerocket },
		"Windows2022":  func(o *Options) { o.AMIFamily = AMIFamilyWindows2022 },
		"Custom":       func(o *Options) { o.AMIFamily = AMIFamilyCustom },
		"kubelet and RAID0": func(o *Options) {
			o.Kubelet = KubeletOptions{PodsPerCore: ptr[int32](4), KubeReserved: map[string]string{"cpu": "100m"}, EvictionHard: map[string]string{"memory.available": "5%"}}
			o.InstanceStorePolicy = InstanceStorePolicyRAID0
			o.ReservedENIs = 1
			o.RootVolumeSize = ptr(resource.MustParse("80Gi"))
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions()
			edit(&opts)
			want, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Compute(facts, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Compute differs from Load (-Load +Compute):\n%s", diff)
			}
		})
	}
}

// TestComputeWithoutZones checks that Compute accepts no zones and then
// computes no offerings, while Load still requires zones.
func TestComputeWithoutZones(t *testing.T) {
	facts, err := Facts()
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.Zones = nil
	its, err := Compute(facts[:3], opts)
	if err != nil {
		t.Fatalf("Compute without zones: %v", err)
	}
	for _, it := range its {
		if len(it.Offerings) != 0 {
			t.Errorf("%s: %d offerings, want none", it.Name, len(it.Offerings))
		}
	}
	if _, err := Load(opts); err == nil {
		t.Error("Load without zones succeeded, want an error")
	}
	opts.AMIFamily = "Ubuntu"
	if _, err := Compute(facts[:1], opts); err == nil {
		t.Error("Compute with an unknown AMI family succeeded, want an error")
	}
}

// TestComputeDoesNotRetainFacts checks that changing the facts after Compute
// changes nothing computed, and that Compute does not change them.
func TestComputeDoesNotRetainFacts(t *testing.T) {
	facts, err := Facts()
	if err != nil {
		t.Fatal(err)
	}
	facts = facts[:1]
	before, _ := Facts()
	its, err := Compute(facts, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before[:1], facts); diff != "" {
		t.Errorf("Compute changed its input (-before +after):\n%s", diff)
	}
	want := its[0].Labels[LabelInstanceFamily]
	facts[0].Family = "changed"
	if got := its[0].Labels[LabelInstanceFamily]; got != want {
		t.Errorf("label changed with the input: %q, want %q", got, want)
	}
}

func TestSpotPriceIsTheOfferingPrice(t *testing.T) {
	its := mustLoad(t, DefaultOptions())
	it := its["m5.large"]
	for _, o := range it.Offerings {
		if o.CapacityType != "spot" {
			continue
		}
		if got := SpotPrice("m5.large", o.Zone, 0.096); got != o.Price {
			t.Errorf("SpotPrice(m5.large, %s) = %v, offering price %v", o.Zone, got, o.Price)
		}
	}
}
