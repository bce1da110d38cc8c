package ec2types

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// loadCatalog loads the catalog with the default options and fails the test
// if it cannot.
func loadCatalog(tb testing.TB) []catalog.InstanceType {
	tb.Helper()
	its, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		tb.Fatalf("loading catalog: %v", err)
	}
	return its
}

// byName returns the converted type with the given name, failing if absent.
func byName(t *testing.T, its []*cloudprovider.InstanceType, name string) *cloudprovider.InstanceType {
	t.Helper()
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
	if i < 0 {
		t.Fatalf("instance type %s not converted", name)
	}
	return its[i]
}

// rendered renders the requirements on keys as "Op [values]" strings.
func rendered(it *cloudprovider.InstanceType, keys []string) map[string]string {
	out := map[string]string{}
	for _, key := range keys {
		r, ok := it.Requirements.Get(key)
		if !ok {
			out[key] = "<none>"
			continue
		}
		var parts []string
		for _, nsr := range r.NodeSelectorRequirements() {
			parts = append(parts, string(nsr.Operator)+" "+strings.Join(nsr.Values, ","))
		}
		out[key] = strings.TrimSpace(strings.Join(parts, "; "))
	}
	return out
}

// shown renders quantities in a canonical string form.
func shown(list corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for name, q := range list {
		out[string(name)] = q.String()
	}
	return out
}

func TestFromCatalog(t *testing.T) {
	its := FromCatalog(loadCatalog(t))
	const (
		zones = "In us-east-1a,us-east-1b,us-east-1c"
		types = "In on-demand,spot"
	)
	cases := map[string]struct {
		wantReqs      map[string]string
		wantCapacity  map[string]string
		wantOfferings int
		wantCheapest  cloudprovider.Offering
	}{
		"m5.large": {
			wantReqs: map[string]string{
				corev1.LabelInstanceTypeStable:                    "In m5.large",
				corev1.LabelArchStable:                            "In amd64",
				corev1.LabelOSStable:                              "In linux",
				corev1.LabelTopologyRegion:                        "In us-east-1",
				corev1.LabelTopologyZone:                          zones,
				v1.CapacityTypeLabelKey:                           types,
				corev1.LabelWindowsBuild:                          "DoesNotExist",
				catalog.LabelInstanceCategory:                     "In m",
				catalog.LabelInstanceFamily:                       "In m5",
				catalog.LabelInstanceGeneration:                   "In 5",
				catalog.LabelInstanceSize:                         "In large",
				catalog.LabelInstanceCPU:                          "In 2",
				catalog.LabelInstanceMemory:                       "In 8192",
				catalog.LabelInstanceHypervisor:                   "In nitro",
				catalog.LabelInstanceCPUManufacturer:              "In intel",
				catalog.LabelInstanceCPUSustainedClockSpeedMhz:    "In 3100",
				catalog.LabelInstanceEncryptionInTransitSupported: "In false",
				catalog.LabelInstanceCapabilityFlex:               "In false",
				catalog.LabelInstanceNetworkBandwidth:             "In 750",
				catalog.LabelInstanceEBSBandwidth:                 "In 4750",
				catalog.LabelInstanceLocalNVMe:                    "DoesNotExist",
				catalog.LabelInstanceGPUName:                      "DoesNotExist",
				catalog.LabelInstanceGPUManufacturer:              "DoesNotExist",
				catalog.LabelInstanceGPUCount:                     "DoesNotExist",
				catalog.LabelInstanceGPUMemory:                    "DoesNotExist",
				catalog.LabelInstanceAcceleratorName:              "DoesNotExist",
				catalog.LabelInstanceAcceleratorManufacturer:      "DoesNotExist",
				catalog.LabelInstanceAcceleratorCount:             "DoesNotExist",
			},
			wantCapacity: map[string]string{
				"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi", "vpc.amazonaws.com/pod-eni": "9",
			},
			wantOfferings: 6,
			wantCheapest:  cloudprovider.Offering{Zone: "us-east-1c", CapacityType: v1.CapacityTypeSpot, Price: 0.041472, Available: true},
		},
		"g4dn.xlarge (GPU)": {
			wantReqs: map[string]string{
				corev1.LabelInstanceTypeStable:       "In g4dn.xlarge",
				corev1.LabelArchStable:               "In amd64",
				catalog.LabelInstanceCategory:        "In g",
				catalog.LabelInstanceGPUName:         "In t4",
				catalog.LabelInstanceGPUManufacturer: "In nvidia",
				catalog.LabelInstanceGPUCount:        "In 1",
				catalog.LabelInstanceGPUMemory:       "In 16384",
				catalog.LabelInstanceLocalNVMe:       "In 125",
				catalog.LabelInstanceAcceleratorName: "DoesNotExist",
				corev1.LabelTopologyZone:             zones,
				v1.CapacityTypeLabelKey:              types,
			},
			wantCapacity: map[string]string{
				"cpu": "4", "memory": "15155Mi", "pods": "29", "ephemeral-storage": "20Gi", "nvidia.com/gpu": "1", "vpc.amazonaws.com/pod-eni": "39",
			},
			wantOfferings: 6,
			wantCheapest:  cloudprovider.Offering{Zone: "us-east-1a", CapacityType: v1.CapacityTypeSpot, Price: 0.197829, Available: true},
		},
		"m6g.large (arm64)": {
			wantReqs: map[string]string{
				corev1.LabelInstanceTypeStable:       "In m6g.large",
				corev1.LabelArchStable:               "In arm64",
				catalog.LabelInstanceCPUManufacturer: "In aws",
				catalog.LabelInstanceGeneration:      "In 6",
				catalog.LabelInstanceGPUCount:        "DoesNotExist",
				corev1.LabelTopologyZone:             zones,
				v1.CapacityTypeLabelKey:              types,
			},
			wantCapacity: map[string]string{
				// 8192Mi less 64Mi for arm64, less 7.5% VM overhead.
				"cpu": "2", "memory": "7518Mi", "pods": "29", "ephemeral-storage": "20Gi", "vpc.amazonaws.com/pod-eni": "9",
			},
			wantOfferings: 6,
			wantCheapest:  cloudprovider.Offering{Zone: "us-east-1c", CapacityType: v1.CapacityTypeSpot, Price: 0.032201, Available: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			it := byName(t, its, strings.Fields(name)[0])
			if diff := cmp.Diff(tc.wantReqs, rendered(it, slices.Collect(maps.Keys(tc.wantReqs)))); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCapacity, shown(it.Capacity)); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if got := len(it.Offerings); got != tc.wantOfferings {
				t.Errorf("offerings = %d, want %d", got, tc.wantOfferings)
			}
			cheapest, ok := it.CheapestOffering(nil)
			if !ok {
				t.Fatal("no available offering")
			}
			if diff := cmp.Diff(tc.wantCheapest, cheapest); diff != "" {
				t.Errorf("cheapest offering (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromCatalogWholeCatalog checks invariants on every type: the
// requirements constrain exactly the well-known keys, pin every catalog label,
// and the allocatable the model computes equals the catalog's.
func TestFromCatalogWholeCatalog(t *testing.T) {
	cat := loadCatalog(t)
	its := FromCatalog(cat)
	if len(its) != len(cat) {
		t.Fatalf("converted %d types, want %d", len(its), len(cat))
	}
	wellKnown := catalog.WellKnownLabels()
	for i, it := range its {
		want := &cat[i]
		if it.Name != want.Name {
			t.Fatalf("type %d is %s, want %s (order not kept)", i, it.Name, want.Name)
		}
		if diff := cmp.Diff(wellKnown, it.Requirements.Keys()); diff != "" {
			t.Errorf("%s: requirement keys (-want +got):\n%s", it.Name, diff)
		}
		for _, o := range want.Offerings {
			labels := maps.Clone(want.Labels)
			labels[corev1.LabelTopologyZone] = o.Zone
			labels[v1.CapacityTypeLabelKey] = o.CapacityType
			if !it.Requirements.Matches(labels) {
				t.Errorf("%s: requirements do not match the labels of a node of offering %+v", it.Name, o)
			}
		}
		for key, value := range want.Labels {
			if got := it.Requirements.Labels()[key]; got != value {
				t.Errorf("%s: label %s = %q, want %q", it.Name, key, got, value)
			}
		}
		if diff := cmp.Diff(shown(want.Allocatable), shown(it.Allocatable())); diff != "" {
			t.Errorf("%s: allocatable (-catalog +model):\n%s", it.Name, diff)
		}
		if len(want.Offerings) == 0 {
			if err := it.Requirements.Satisfiable(); err == nil {
				t.Errorf("%s: has no offerings but its requirements are satisfiable", it.Name)
			}
		}
	}
}

// TestFromCatalogSharesNothing checks that changing the input after the
// conversion does not change the result.
func TestFromCatalogSharesNothing(t *testing.T) {
	cat := loadCatalog(t)[:1]
	it := FromCatalog(cat)[0]
	before := shown(it.Capacity)
	for name := range cat[0].Capacity {
		q := cat[0].Capacity[name]
		q.Add(q)
		cat[0].Capacity[name] = q
	}
	cat[0].Offerings[0].Price = 1e9
	if diff := cmp.Diff(before, shown(it.Capacity)); diff != "" {
		t.Errorf("capacity changed with the input (-before +after):\n%s", diff)
	}
	if it.Offerings[0].Price == 1e9 {
		t.Error("offerings share the input's backing array")
	}
}

func TestOfferingRequirements(t *testing.T) {
	cases := map[string]struct {
		offerings []cloudprovider.Offering
		want      []string
	}{
		"available only": {
			offerings: []cloudprovider.Offering{
				{Zone: "z1", CapacityType: "spot", Available: true},
				{Zone: "z2", CapacityType: "on-demand", Available: false},
				{Zone: "z1", CapacityType: "on-demand", Available: true},
			},
			want: []string{"topology.kubernetes.io/zone In [z1]", "karpenter.sh/capacity-type In [on-demand spot]"},
		},
		"none available admits nothing": {
			offerings: []cloudprovider.Offering{{Zone: "z1", CapacityType: "spot"}},
			want:      []string{"topology.kubernetes.io/zone In", "karpenter.sh/capacity-type In"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, r := range OfferingRequirements(tc.offerings) {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("OfferingRequirements (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkFromCatalog(b *testing.B) {
	cat := loadCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		its := FromCatalog(cat)
		if len(its) != len(cat) {
			b.Fatalf("converted %d types, want %d", len(its), len(cat))
		}
	}
}
