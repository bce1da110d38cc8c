package crdinstall

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
)

// TestPoliciesGoWithCRDs checks that every embedded policy decodes, goes
// with one of Dovetail's CRDs and matches only that CRD's resource.
func TestPoliciesGoWithCRDs(t *testing.T) {
	t.Parallel()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	plurals := map[string]string{}
	for _, crd := range all {
		plurals[crd.Name] = crd.Spec.Names.Plural
	}
	policies, err := Policies()
	if err != nil {
		t.Fatal(err)
	}
	if len(policies) == 0 {
		t.Fatal("no embedded policies")
	}
	for _, p := range policies {
		plural, ok := plurals[p.CRD]
		if !ok {
			t.Errorf("policy %s goes with %s, which is not one of Dovetail's CRDs", p.Policy.Name, p.CRD)
			continue
		}
		for _, rule := range p.Policy.Spec.MatchConstraints.ResourceRules {
			for _, r := range rule.Resources {
				if r != plural {
					t.Errorf("policy %s matches %s, want only %s", p.Policy.Name, r, plural)
				}
			}
		}
	}
}

// TestChartShipsThePolicies checks that the dovetail-crd chart's copy of the
// policies (files/policies) is the embedded source, file for file.
func TestChartShipsThePolicies(t *testing.T) {
	t.Parallel()
	chart := filepath.Join("..", "..", "charts", "dovetail-crd", "files", "policies")
	copies, err := filepath.Glob(filepath.Join(chart, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policies, err := Policies()
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != len(policies) {
		t.Errorf("the chart has %d policy files, want %d (cp internal/crdinstall/policies/*.yaml %s/)", len(copies), len(policies), chart)
	}
	for _, path := range copies {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := PolicyFile(filepath.Base(path))
		if !ok {
			t.Errorf("the chart's %s has no source in internal/crdinstall/policies", path)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("the chart's %s differs from internal/crdinstall/policies/%s; copy it", path, filepath.Base(path))
		}
	}
}
