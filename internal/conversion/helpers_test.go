package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// cmpOptions make cmp.Diff readable for API objects: quantities by value,
// durations by text, nil and empty collections alike.
func cmpOptions() []cmp.Option {
	return []cmp.Option{
		cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmp.Transformer("NillableDuration", func(d v1.NillableDuration) string { return d.String() }),
		cmp.Transformer("Duration", func(d v1.Duration) string { return d.String() }),
		cmpopts.EquateEmpty(),
	}
}

// checkErr fails t unless err's text is want ("" means no error).
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil && want != "":
		t.Fatalf("got no error, want %q", want)
	case err != nil && want == "":
		t.Fatalf("unexpected error: %v", err)
	case err != nil && err.Error() != want:
		t.Fatalf("got error %q, want %q", err, want)
	}
}
