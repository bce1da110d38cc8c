package api_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// mutation changes an object before it is sent.
type mutation func(t *testing.T, obj map[string]any)

// set returns a mutation that sets the value at a dotted path such as
// "spec.template.spec.requirements[0].operator", creating maps on the way.
func set(path string, value any) mutation {
	return func(t *testing.T, obj map[string]any) {
		t.Helper()
		parent, last := walk(t, obj, path, true)
		if i, ok := value.(int); ok {
			value = int64(i) // unstructured objects hold JSON numbers as int64
		}
		assign(t, parent, last, value)
	}
}

// del returns a mutation that removes the value at a dotted path.
func del(path string) mutation {
	return func(t *testing.T, obj map[string]any) {
		t.Helper()
		parent, last := walk(t, obj, path, false)
		m, ok := parent.(map[string]any)
		if !ok {
			t.Fatalf("del %s: parent is not a map", path)
		}
		delete(m, last)
	}
}

// walk returns the container holding the last path element and that element.
func walk(t *testing.T, obj map[string]any, path string, create bool) (any, string) {
	t.Helper()
	tokens := tokenize(path)
	var cur any = obj
	for _, tok := range tokens[:len(tokens)-1] {
		cur = step(t, cur, tok, create, path)
	}
	return cur, tokens[len(tokens)-1]
}

// tokenize splits "a.b[0].c" into ["a", "b", "[0]", "c"].
func tokenize(path string) []string {
	var tokens []string
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			tokens = append(tokens, name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			tokens = append(tokens, "["+idx+"]")
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return tokens
}

func step(t *testing.T, cur any, tok string, create bool, path string) any {
	t.Helper()
	if strings.HasPrefix(tok, "[") {
		i, err := strconv.Atoi(strings.Trim(tok, "[]"))
		list, ok := cur.([]any)
		if err != nil || !ok || i >= len(list) {
			t.Fatalf("path %s: %s is not an index of a list", path, tok)
		}
		return list[i]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		t.Fatalf("path %s: %s is not a map key", path, tok)
	}
	next, ok := m[tok]
	if !ok {
		if !create {
			t.Fatalf("path %s: %s not found", path, tok)
		}
		next = map[string]any{}
		m[tok] = next
	}
	return next
}

func assign(t *testing.T, parent any, last string, value any) {
	t.Helper()
	if strings.HasPrefix(last, "[") {
		i, err := strconv.Atoi(strings.Trim(last, "[]"))
		list, ok := parent.([]any)
		if err != nil || !ok || i >= len(list) {
			t.Fatalf("cannot assign %s", last)
		}
		list[i] = value
		return
	}
	m, ok := parent.(map[string]any)
	if !ok {
		t.Fatalf("cannot assign %s: parent is not a map", last)
	}
	m[last] = value
}

// object decodes YAML into an unstructured object, failing the test on error.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("decoding manifest: %v\n%s", err, manifest)
	}
	return &unstructured.Unstructured{Object: obj}
}

// yamlList decodes a YAML flow value such as `[{key: a}]` for use in set().
func yamlValue(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("decoding value %q: %v", text, err)
	}
	return v
}

// dryRunCreate asks the API server to admit obj without storing it.
func dryRunCreate(obj *unstructured.Unstructured) error {
	return testEnv.Client.Create(context.Background(), obj.DeepCopy(), client.DryRunAll)
}

// uniqueName returns a name unique within the test run.
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return fmt.Sprintf("%s-%s", prefix, strings.Trim(name, "-"))
}
