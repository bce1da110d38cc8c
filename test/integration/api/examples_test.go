package api_test

import (
	"path/filepath"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/testing/manifests"
)

// placeholders fill the envsubst-style variables of the upstream examples.
var placeholders = map[string]string{"CLUSTER_NAME": "dovetail-test"}

// TestV1ExamplesAreAccepted admits every object of the upstream v1 examples
// and of the v1 API document (server-side dry run: validated, not stored).
func TestV1ExamplesAreAccepted(t *testing.T) {
	files, err := filepath.Glob("../../conformance/examples/v1/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := filepath.Glob("testdata/seed-v1-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, seeds...)
	if len(files) < 25 {
		t.Fatalf("found only %d example files; the conformance fixtures are missing", len(files))
	}
	kinds := map[string]int{}
	for _, file := range files {
		objects, err := manifests.Load(file, placeholders)
		if err != nil {
			t.Fatal(err)
		}
		for i, obj := range objects {
			kinds[obj.GetKind()]++
			t.Run(filepath.Base(file)+"/"+obj.GetKind()+"/"+obj.GetName(), func(t *testing.T) {
				if err := dryRunCreate(obj); err != nil {
					t.Errorf("document %d of %s was rejected: %v", i, file, err)
				}
			})
		}
	}
	for _, kind := range []string{"NodePool", "NodeClaim", "EC2NodeClass"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s example was checked", kind)
		}
	}
}
