package manifest

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// cmpOpts make cmp.Diff readable for API objects.
func cmpOpts() []cmp.Option {
	return []cmp.Option{
		cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmp.Transformer("NillableDuration", func(d v1.NillableDuration) string { return d.String() }),
		cmp.Transformer("Duration", func(d v1.Duration) string { return d.String() }),
		cmpopts.EquateEmpty(),
	}
}

// checkGolden compares got with testdata/golden/name, or rewrites the file
// when DOVETAIL_UPDATE_GOLDEN is set.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if os.Getenv("DOVETAIL_UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (set DOVETAIL_UPDATE_GOLDEN=1 to write it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// sharedConverter is one Converter for the whole test binary, so that the CRD
// schemas are compiled once; Converter is safe for concurrent use and holds
// no state between calls.
var sharedConverter = sync.OnceValues(NewConverter)

// convert runs ConvertAll with the shared Converter.
func convert(t *testing.T, opts Options, inputs ...Input) (Result, error) {
	t.Helper()
	c, err := sharedConverter()
	if err != nil {
		t.Fatal(err)
	}
	return c.ConvertAll(inputs, opts)
}

func itoa(n int) string { return strconv.Itoa(n) }
