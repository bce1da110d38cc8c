package catalog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// The documented data covers 1363 types, 18 of them without a us-east-1 price.
const (
	documentedTypes = 1363
	unpricedTypes   = 18
)

// TestLoadMatchesDocumentedData checks every type of hack/data/ec2 under the
// default options, which are the options the data was computed with.
func TestLoadMatchesDocumentedData(t *testing.T) {
	docs := readDocumented(t)
	prices := readPrices(t)
	its, err := Load(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != documentedTypes || len(docs) != documentedTypes {
		t.Fatalf("Load returned %d types and the data has %d, want %d", len(its), len(docs), documentedTypes)
	}
	if !slices.IsSortedFunc(its, func(a, b InstanceType) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Load's result is not sorted by name")
	}
	unpriced := 0
	for _, it := range its {
		doc, ok := docs[it.Name]
		if !ok {
			t.Errorf("%s: not in the documented data", it.Name)
			continue
		}
		// Allocatable cpu, memory and ephemeral-storage, to the unit.
		wantAlloc := map[corev1.ResourceName]int64{
			corev1.ResourceCPU:              doc.Allocatable.CPUMilli,
			corev1.ResourceMemory:           doc.Allocatable.MemoryMiB << 20 * 1000,
			corev1.ResourceEphemeralStorage: int64(doc.Allocatable.EphemeralStorageGiB*(1<<30)) * 1000,
		}
		for name, want := range wantAlloc {
			q := it.Allocatable[name]
			if got := q.MilliValue(); got != want {
				t.Errorf("%s: allocatable %s = %s, documented %s", it.Name, name, show(q), doc.Resources[string(name)])
			}
		}
		// Pods: ENI-limited for types with VPC limits (and the documented
		// count for the others, which the catalog carries as is).
		pods := it.Capacity[corev1.ResourcePods]
		if string(doc.VPCLimits) != "null" && pods.Value() != doc.MaxPods {
			t.Errorf("%s: pods = %d, documented %d", it.Name, pods.Value(), doc.MaxPods)
		}
		// Every documented resource other than cpu, memory and
		// ephemeral-storage is a count that allocatable must equal.
		wantRes := map[string]string{}
		for name, v := range doc.Resources {
			switch name {
			case "cpu", "memory", "ephemeral-storage":
				continue
			}
			wantRes[name] = v
		}
		gotRes := shown(it.Allocatable)
		for _, name := range []string{"cpu", "memory", "ephemeral-storage"} {
			delete(gotRes, name)
		}
		if diff := cmp.Diff(wantRes, gotRes); diff != "" {
			t.Errorf("%s: extended resources and pods (-documented +got):\n%s", it.Name, diff)
		}
		for name, q := range it.Capacity {
			switch name {
			case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
				continue
			}
			if a := it.Allocatable[name]; a.Cmp(q) != 0 {
				t.Errorf("%s: allocatable %s = %s, want its capacity %s", it.Name, name, show(a), show(q))
			}
		}
		// Labels: the documented ones plus the region and the tenancy (a
		// requirement Karpenter's instance-type page does not list per type).
		wantLabels := map[string]string{corev1.LabelTopologyRegion: "us-east-1", LabelInstanceTenancy: TenancyDefault}
		for k, v := range doc.Labels {
			wantLabels[k] = v
		}
		if diff := cmp.Diff(wantLabels, it.Labels); diff != "" {
			t.Errorf("%s: labels (-documented +got):\n%s", it.Name, diff)
		}
		// Offerings: the table's price on demand, none without a price.
		price, priced := prices[it.Name]
		if !priced {
			unpriced++
			if len(it.Offerings) != 0 {
				t.Errorf("%s: has no price but %d offerings", it.Name, len(it.Offerings))
			}
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == "on-demand" && o.Price != price {
				t.Errorf("%s: on-demand price in %s = %v, want %v", it.Name, o.Zone, o.Price, price)
			}
		}
	}
	if unpriced != unpricedTypes {
		t.Errorf("%d types without a price, want %d", unpriced, unpricedTypes)
	}
}

// TestLoadReturnsFreshValues mutates everything one Load returned and checks
// that the next Load is unaffected.
func TestLoadReturnsFreshValues(t *testing.T) {
	first, err := Load(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		it := &first[i]
		it.Labels["mutated"] = "true"
		it.Labels[corev1.LabelArchStable] = "s390x"
		for _, rl := range []corev1.ResourceList{it.Capacity, it.Allocatable, it.Overhead.KubeReserved, it.Overhead.SystemReserved, it.Overhead.EvictionThreshold} {
			for name, q := range rl {
				q.Add(q)
				rl[name] = q
			}
			rl["example.com/mutated"] = rl[corev1.ResourceCPU]
		}
		for j := range it.Offerings {
			it.Offerings[j].Price = -1
		}
	}
	second, err := Load(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(second)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("a second Load returned values changed through the first one's")
	}
}

func TestWellKnownLabels(t *testing.T) {
	keys := WellKnownLabels()
	if !slices.IsSorted(keys) {
		t.Errorf("WellKnownLabels() is not sorted: %v", keys)
	}
	for _, k := range []string{corev1.LabelTopologyZone, "karpenter.sh/capacity-type"} {
		if !slices.Contains(keys, k) {
			t.Errorf("WellKnownLabels() lacks %s", k)
		}
	}
	// Every label of every type, under every family, is well known.
	for _, family := range amiFamilyNames() {
		opts := DefaultOptions()
		opts.AMIFamily = AMIFamily(family)
		for _, it := range mustLoad(t, opts) {
			for k := range it.Labels {
				if !slices.Contains(keys, k) {
					t.Fatalf("%s under %s: label %s is not in WellKnownLabels()", it.Name, family, k)
				}
			}
		}
	}
	keys[0] = "mutated"
	if WellKnownLabels()[0] == "mutated" {
		t.Error("WellKnownLabels() returns a shared slice")
	}
}

func TestDecodeRejectsBadCatalog(t *testing.T) {
	cases := map[string]string{
		"not json":   `{`,
		"not sorted": `{"instanceTypes":[{"name":"m5.xlarge"},{"name":"m5.large"}]}`,
		"duplicate":  `{"instanceTypes":[{"name":"m5.large"},{"name":"m5.large"}]}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decode([]byte(in)); err == nil || !strings.Contains(err.Error(), "decoding embedded catalog") {
				t.Errorf("decode() error = %v, want a decoding error", err)
			}
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	opts := DefaultOptions()
	if _, err := Load(opts); err != nil { // decode outside the timer
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode measures the one-time decoding of the embedded catalog.
func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(catalogJSON); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadIsSafeForConcurrentUse loads from several goroutines at once; run
// with -race to check the shared decoded data is only read.
func TestLoadIsSafeForConcurrentUse(t *testing.T) {
	want, err := json.Marshal(mustLoad(t, DefaultOptions()))
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan []byte, 4)
	for range cap(results) {
		go func() {
			its, err := Load(DefaultOptions())
			if err != nil {
				results <- []byte(err.Error())
				return
			}
			b, _ := json.Marshal(indexByName(its))
			results <- b
		}()
	}
	for range cap(results) {
		if got := <-results; string(got) != string(want) {
			t.Error("a concurrent Load returned something else")
		}
	}
}
