// Package architecture_test enforces the import rules of STYLE.md, so that
// the dependency graph points one way: api -> requirements -> cloudprovider
// -> simulator -> state -> controllers -> operator -> cli -> cmd. A broken
// rule fails `go test`, not a code review.
package architecture_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/dovetail-autoscaler/dovetail"

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	// go test caches results by the files the test itself opens; the files
	// `go list` read do not count. Read every package directory and stat every
	// source file so that an added or edited file invalidates the cached result.
	for _, p := range pkgs {
		if _, err := os.ReadDir(p.Dir); err != nil { // new files, too
			t.Fatal(err)
		}
		for _, f := range p.GoFiles {
			if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return pkgs
}

// rule forbids packages under a path from depending on some packages.
type rule struct {
	// under selects the packages the rule applies to (prefix of the path in the module).
	under string
	// direct checks direct imports only; otherwise every transitive dependency.
	direct bool
	// allowed, when set, is the only prefixes a (direct) import may have.
	allowed []string
	// forbidden are prefixes no dependency may have.
	forbidden []string
	why       string
}

func TestImportRules(t *testing.T) {
	rules := []rule{
		{under: "api/", direct: true, allowed: []string{"k8s.io/api/", "k8s.io/apimachinery/", module + "/api/", "sigs.k8s.io/yaml", "k8s.io/apiextensions-apiserver/pkg/apis/"},
			why: "API types depend on apimachinery only"},
		{under: "internal/simulator", forbidden: []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go/", module + "/internal/controllers", module + "/internal/state", module + "/internal/cloudprovider/kwok", module + "/internal/cloudprovider/fake", module + "/internal/operator"},
			why: "the simulator is a pure leaf: no API client, no controllers, no concrete provider"},
		{under: "internal/requirements", forbidden: []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go/", module + "/internal/simulator", module + "/internal/cloudprovider"},
			why: "the requirement algebra is pure"},
		{under: "internal/cloudprovider", direct: true, forbidden: []string{module + "/internal/controllers", module + "/internal/state", module + "/internal/simulator", module + "/internal/operator"},
			why: "providers import only cloudprovider, requirements, catalog and api"},
		{under: "internal/controllers", direct: true, forbidden: []string{module + "/internal/cloudprovider/kwok", module + "/internal/cloudprovider/fake", module + "/internal/cli", module + "/internal/operator"},
			why: "controllers never import a concrete provider or the layers above them"},
		{under: "internal/state", direct: true, forbidden: []string{module + "/internal/controllers"},
			why: "cluster state is read by controllers, never the reverse"},
		{under: "internal/machine", forbidden: []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go/", module + "/internal/state", module + "/internal/controllers"},
			why: "a machine and its snapshot are plain values, below the cluster-state model"},
		{under: "internal/disruption", forbidden: []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go/", module + "/internal/state", module + "/internal/controllers", module + "/internal/operator"},
			why: "disruption decisions are pure: they take machines and simulator types, not the cluster-state model or a client"},
	}
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		for _, r := range rules {
			if !strings.HasPrefix(rel, r.under) || strings.HasSuffix(rel, "_test") {
				continue
			}
			deps := p.Deps
			if r.direct {
				deps = p.Imports
			}
			for _, d := range deps {
				if !strings.Contains(strings.Split(d, "/")[0], ".") {
					continue // standard library
				}
				if len(r.allowed) > 0 && !hasPrefix(d, r.allowed) {
					t.Errorf("%s imports %s: %s", rel, d, r.why)
				}
				if hasPrefix(d, r.forbidden) {
					t.Errorf("%s depends on %s: %s", rel, d, r.why)
				}
			}
		}
	}
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
