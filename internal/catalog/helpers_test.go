package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// sourceDir holds the data the catalog is generated from; tests compare the
// computed values with what it documents.
const sourceDir = "../../hack/data/ec2"

// documentedType is the part of an instance-types.json entry the tests check against.
type documentedType struct {
	Name        string `json:"name"`
	MaxPods     int64  `json:"maxPods"`
	Allocatable struct {
		CPUMilli            int64   `json:"cpuMilli"`
		MemoryMiB           int64   `json:"memoryMiB"`
		EphemeralStorageGiB float64 `json:"ephemeralStorageGiB"`
	} `json:"allocatable"`
	VPCLimits json.RawMessage   `json:"vpcLimits"`
	Labels    map[string]string `json:"labels"`
	Resources map[string]string `json:"resources"`
}

// readDocumented returns the documented instance types, keyed by name.
func readDocumented(t *testing.T) map[string]documentedType {
	t.Helper()
	b, err := os.ReadFile(sourceDir + "/instance-types.json")
	if err != nil {
		t.Fatal(err)
	}
	var list []documentedType
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("parsing instance-types.json: %v", err)
	}
	out := make(map[string]documentedType, len(list))
	for _, d := range list {
		out[d.Name] = d
	}
	return out
}

// readPrices returns the us-east-1 on-demand prices.
func readPrices(t *testing.T) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(sourceDir + "/pricing-on-demand.json")
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]map[string]float64
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatalf("parsing pricing-on-demand.json: %v", err)
	}
	return all["us-east-1"]
}

// mustLoad loads the catalog and indexes it by name.
func mustLoad(t testing.TB, opts Options) map[string]InstanceType {
	t.Helper()
	its, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return indexByName(its)
}

func indexByName(its []InstanceType) map[string]InstanceType {
	out := make(map[string]InstanceType, len(its))
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

// show prints a quantity in one canonical form, so that equal values print
// alike whatever their format: millicores when fractional, else Gi or Mi when
// whole, else the plain integer.
func show(q resource.Quantity) string {
	if m := q.MilliValue(); m%1000 != 0 {
		return fmt.Sprintf("%dm", m)
	}
	v := q.Value()
	switch {
	case v != 0 && v%(1<<30) == 0:
		return fmt.Sprintf("%dGi", v>>30)
	case v != 0 && v%(1<<20) == 0:
		return fmt.Sprintf("%dMi", v>>20)
	}
	return strconv.FormatInt(v, 10)
}

// shown is a resource list in canonical form, for readable cmp.Diff output.
func shown(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		out[string(name)] = show(q)
	}
	return out
}

// canonical parses each value and prints it the way shown does.
func canonical(t *testing.T, m map[string]string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(m))
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			t.Fatalf("bad quantity %s=%q in test: %v", k, v, err)
		}
		out[k] = show(q)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
