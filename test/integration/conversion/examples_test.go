package conversion_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dovetail-autoscaler/dovetail/internal/testing/manifests"
)

// placeholders fill the envsubst-style variables of the examples and seeds.
func placeholders() map[string]string { return map[string]string{"CLUSTER_NAME": "dovetail-test"} }

// exampleFile is one manifest file with its objects, renamed so that files
// naming the same objects (most call theirs "default") can live side by
// side.
type exampleFile struct {
	name    string
	objects []*unstructured.Unstructured
}

// loadExamples loads the files of a glob. Objects of the upstream examples
// are renamed <file>-<name>; the seed fixtures have unique names already and
// refer to each other (a NodeClaim's karpenter.sh/nodepool label), so they
// keep theirs.
func loadExamples(t *testing.T, patterns ...string) []exampleFile {
	t.Helper()
	var files []exampleFile
	for _, pattern := range patterns {
		paths, err := filepath.Glob(pattern)
		if err != nil || len(paths) == 0 {
			t.Fatalf("no files match %s (%v)", pattern, err)
		}
		for _, path := range paths {
			objects, err := manifests.Load(path, placeholders())
			if err != nil {
				t.Fatal(err)
			}
			stem := strings.TrimSuffix(filepath.Base(path), ".yaml")
			if !strings.HasPrefix(stem, "seed-") {
				for _, obj := range objects {
					obj.SetName(strings.ToLower(stem) + "-" + obj.GetName())
				}
			}
			files = append(files, exampleFile{name: filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path), objects: objects})
		}
	}
	return files
}

// createWithStatus creates obj at its apiVersion and then, if obj has a
// status, writes it through the status subresource at the same version. It
// returns obj as the API server should keep it at that version.
func createWithStatus(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	created := create(t, withoutStatus(obj))
	status, hasStatus, _ := unstructured.NestedMap(obj.Object, "status")
	if !hasStatus {
		return defaulted(t, withoutStatus(obj))
	}
	if err := unstructured.SetNestedMap(created.Object, status, "status"); err != nil {
		t.Fatal(err)
	}
	gv := created.GroupVersionKind()
	if _, err := dyn(t, gv.Kind, gv.Version).UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of %s %s as %s: %v", obj.GetKind(), obj.GetName(), gv.Version, err)
	}
	return defaulted(t, obj)
}

// TestV1beta1ObjectsReadAsV1 creates every object of Karpenter's v1beta1
// examples and of the v1beta1 API document through v1beta1, then reads it
// as v1 (the v1beta1 -> v1 mapping applied) and again as v1beta1 (what was
// written, nothing lost, only defaults added).
func TestV1beta1ObjectsReadAsV1(t *testing.T) {
	serveConversions(t)
	files := loadExamples(t, "../../conformance/examples/v1beta1/*.yaml", "testdata/seed-v1beta1*.yaml")
	kinds := map[string]int{}
	for _, file := range files {
		t.Run(file.name, func(t *testing.T) {
			for _, obj := range file.objects {
				kinds[obj.GetKind()]++
				written := createWithStatus(t, obj)
				asV1 := get(t, obj.GetKind(), obj.GetName(), "v1")
				expectSame(t, obj.GetKind()+" "+obj.GetName()+" read as v1", convertLocally(t, written, "v1"), asV1)
				checkV1beta1ToV1(t, written, asV1)
				expectSame(t, obj.GetKind()+" "+obj.GetName()+" read back as v1beta1", written, get(t, obj.GetKind(), obj.GetName(), "v1beta1"))
			}
		})
	}
	for _, kind := range []string{"NodePool", "NodeClaim", "EC2NodeClass"} {
		if kinds[kind] == 0 {
			t.Errorf("no v1beta1 %s was checked", kind)
		}
	}
}

// TestV1ObjectsReadAsV1beta1 creates every object of Karpenter's v1
// examples through v1 and reads it as v1beta1 (the v1 -> v1beta1 mapping
// applied), then checks that what v1beta1 shows converts back to the stored
// v1 object, and that writing it back through v1beta1 unchanged leaves the
// v1 object as it was.
//
// Two examples have no valid v1beta1 form (Windows2025, which the v1beta1
// enum lacks, and Custom with an alias, which v1beta1 cannot say without
// AMI terms). They still read as v1beta1 (a conversion must not fail for a
// valid stored object, or every v1beta1 list would), what v1beta1 shows
// converts back exactly (the rest travels in the v1-fields annotation), and
// the API server's validation ratcheting accepts them written back
// unchanged; only a v1beta1 client that creates such an object is refused.
func TestV1ObjectsReadAsV1beta1(t *testing.T) {
	serveConversions(t)
	for _, file := range loadExamples(t, "../../conformance/examples/v1/*.yaml") {
		t.Run(file.name, func(t *testing.T) {
			for _, obj := range file.objects {
				written := createWithStatus(t, obj)
				key := obj.GetKind() + " " + obj.GetName()
				asV1beta1 := get(t, obj.GetKind(), obj.GetName(), "v1beta1")
				expectSame(t, key+" read as v1beta1", convertLocally(t, written, "v1beta1"), asV1beta1)
				checkV1ToV1beta1(t, written, asV1beta1)
				expectSame(t, key+" as v1beta1 converted back to v1", written, convertLocally(t, asV1beta1, "v1"))
				if _, err := dyn(t, obj.GetKind(), "v1beta1").Update(context.Background(), asV1beta1, metav1.UpdateOptions{}); err != nil {
					t.Errorf("writing %s back through v1beta1 unchanged: %v", key, err)
				}
				expectSame(t, key+" read back as v1", written, get(t, obj.GetKind(), obj.GetName(), "v1"))
			}
		})
	}
}
