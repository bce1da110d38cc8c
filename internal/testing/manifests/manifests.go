// Package manifests loads multi-document YAML files into unstructured objects
// for tests, filling envsubst-style placeholders (only the named ones, so that
// shell snippets in user data are left alone).
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var placeholder = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// Substitute replaces ${NAME} for every NAME in vars and fails on any other
// ${...} placeholder, so a test never sends an unfilled manifest.
func Substitute(data []byte, vars map[string]string) ([]byte, error) {
	var missing []string
	out := placeholder.ReplaceAllFunc(data, func(m []byte) []byte {
		name := string(m[2 : len(m)-1])
		value, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return []byte(value)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("no value for placeholders %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// Decode splits a YAML stream into objects, skipping empty documents.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []*unstructured.Unstructured
	for i := 0; ; i++ {
		obj := map[string]any{}
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, fmt.Errorf("decoding document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		objects = append(objects, &unstructured.Unstructured{Object: obj})
	}
}

// Load reads a file, fills placeholders and decodes its documents.
func Load(path string, vars map[string]string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	data, err = Substitute(data, vars)
	if err != nil {
		return nil, fmt.Errorf("filling %s: %w", path, err)
	}
	objects, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objects, nil
}
