package manifest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// TestExamples converts Karpenter's example manifests (testdata/README.md) to
// the other version. Every v1beta1 example converts to v1. Three v1 examples
// cannot be written as v1beta1, and the error says why.
func TestExamples(t *testing.T) {
	t.Parallel()
	wantErrs := map[string]string{
		// Upstream writes group: karpenter.k8s.aws/v1, which the v1 CRD rejects.
		// v1beta1 has no Windows2025.
		"v1/windows-2025.yaml": `document 2 (line 39): EC2NodeClass "windows2025": spec.amiFamily: cannot be represented as karpenter.k8s.aws/v1beta1 EC2NodeClass: Unsupported value: "Windows2025"`,
		// v1beta1 Custom needs terms; the alias has no v1beta1 form.
		"v1/custom-family-with-alias.yaml": `EC2NodeClass "custom-family": spec: cannot be represented as karpenter.k8s.aws/v1beta1 EC2NodeClass: Invalid value: amiSelectorTerms is required when amiFamily == 'Custom'`,
	}
	files, err := filepath.Glob("../../../test/conformance/examples/v1*/*.yaml")
	if err != nil || len(files) < 40 {
		t.Fatalf("found %d example files (%v)", len(files), err)
	}
	for _, file := range files {
		name, _ := filepath.Rel("../../../test/conformance/examples", file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			to := TargetV1
			if strings.HasPrefix(name, "v1/") {
				to = TargetV1beta1
			}
			got, err := convert(t, Options{To: to}, Input{Source: name, Data: data})
			if want, ok := wantErrs[name]; ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Convert() error %v, want one containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Convert() error: %v", err)
			}
			if got.Converted < 2 || got.PassedThrough != 0 {
				t.Errorf("Convert() converted %d, passed through %d", got.Converted, got.PassedThrough)
			}
			for _, doc := range splitYAML(t, got.Output) {
				if want := strings.Split(doc["apiVersion"].(string), "/")[1]; want != to {
					t.Errorf("converted %s %v has apiVersion %v", doc["kind"], doc["metadata"], doc["apiVersion"])
				}
			}
		})
	}
}

// TestExamplesRoundTrip converts every valid example object to the other
// version and back with the webhook's functions and requires the original.
func TestExamplesRoundTrip(t *testing.T) {
	t.Parallel()
	shared, err := sharedConverter()
	if err != nil {
		t.Fatal(err)
	}
	s := shared.schemas
	files, err := filepath.Glob("../../../test/conformance/examples/v1*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	semantic := conversion.Semantic()
	tripped := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var objects []runtime.Object
		pools := conversion.StaticNodePools{}
		for i, ch := range SplitDocuments(data) {
			docs, err := parseChunk(file, i+1, ch)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				obj, err := conversion.NewObject(d.typeMeta.GroupVersionKind())
				if err != nil {
					continue
				}
				it := &item{doc: d}
				if errs := decodeStrict(d.json, obj, nil); len(errs) > 0 {
					t.Fatalf("%s: %v", file, errs)
				}
				c := &converter{schemas: s}
				if !c.validInput(it, d.json) {
					continue // an invalid example (see TestExamples)
				}
				objects = append(objects, obj)
				if np, ok := obj.(*v1.NodePool); ok {
					pools[np.Name] = np
				}
			}
		}
		c := &conversion.Converter{NodePools: pools}
		for _, obj := range objects {
			gvk := obj.GetObjectKind().GroupVersionKind()
			other := map[string]string{"v1": "v1beta1", "v1beta1": "v1"}[gvk.Version]
			there, err := c.Convert(context.Background(), obj, gvk.Group+"/"+other)
			if err != nil {
				t.Fatalf("%s: %s to %s: %v", file, gvk.Kind, other, err)
			}
			back, err := c.Convert(context.Background(), there, gvk.GroupVersion().String())
			if err != nil {
				t.Fatalf("%s: %s back to %s: %v", file, gvk.Kind, gvk.Version, err)
			}
			if !semantic.DeepEqual(obj, back) {
				t.Errorf("%s: %s did not round-trip through %s:\n%s", file, gvk.Kind, other, cmp.Diff(obj, back, cmpOpts()...))
			}
			tripped++
		}
	}
	if tripped < 80 {
		t.Errorf("round-tripped %d example objects, want every valid one (more than 80)", tripped)
	}
	t.Logf("round-tripped %d example objects", tripped)
}
