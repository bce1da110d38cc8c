// Command crdpatch adds to the generated CRDs the validation that
// controller-gen markers cannot express, so that Dovetail's CRDs reject at
// admission what Karpenter's reject:
//
//   - NodePool template label values must be valid label values (at most 63
//     characters, alphanumeric at both ends); a map's value schema has no
//     marker, and a CEL rule over every value would exceed the cost budget.
//   - NodePool template requirements may not name karpenter.sh/nodepool: the
//     pool sets that label itself. NodeClaims share the requirement type and
//     must keep accepting it, so the rule is added to the NodePool CRD only.
//
// It rewrites the files in place; `make generate` runs it after controller-gen.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// labelValuePattern is the Kubernetes label value syntax (empty allowed).
const labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`

func main() {
	dir := flag.String("dir", "api/crds", "directory holding the generated CRD YAML files")
	flag.Parse()
	if err := patchNodePools(filepath.Join(*dir, "karpenter.sh_nodepools.yaml")); err != nil {
		fmt.Fprintf(os.Stderr, "crdpatch: %v\n", err)
		os.Exit(1)
	}
}

// patchNodePools adds the label-value schema and the restricted requirement
// key to every version of the NodePool CRD in path.
func patchNodePools(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := map[string]any{}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	versions, ok := dig(crd, "spec", "versions").([]any)
	if !ok || len(versions) == 0 {
		return fmt.Errorf("%s: spec.versions is missing", path)
	}
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		template := dig(version, "schema", "openAPIV3Schema", "properties", "spec", "properties", "template", "properties")
		labels, ok := dig(template, "metadata", "properties", "labels", "additionalProperties").(map[string]any)
		if !ok {
			return fmt.Errorf("%s: version %s has no spec.template.metadata.labels value schema", path, name)
		}
		labels["maxLength"] = 63
		labels["pattern"] = labelValuePattern
		key, ok := dig(template, "spec", "properties", "requirements", "items", "properties", "key").(map[string]any)
		if !ok {
			return fmt.Errorf("%s: version %s has no spec.template.spec.requirements key schema", path, name)
		}
		rules, _ := key["x-kubernetes-validations"].([]any)
		rule := map[string]any{"message": `label "karpenter.sh/nodepool" is restricted`, "rule": "self != 'karpenter.sh/nodepool'"}
		if !containsRule(rules, rule) {
			key["x-kubernetes-validations"] = append([]any{rule}, rules...)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644) //nolint:gosec // a generated file in the repository
}

// dig walks nested maps by key and returns nil when a step is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// containsRule reports whether rules already holds rule (the patch is
// idempotent when run twice on the same file).
func containsRule(rules []any, rule map[string]any) bool {
	for _, r := range rules {
		if m, ok := r.(map[string]any); ok && m["rule"] == rule["rule"] {
			return true
		}
	}
	return false
}
