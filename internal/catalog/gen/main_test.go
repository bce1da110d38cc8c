package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	dataDir       = "../../../hack/data/ec2"
	committedFile = "../zz_generated.catalog.json"
)

// TestGeneratedCatalogIsUpToDate regenerates the catalog into a temporary
// directory and compares it with the committed file, so that plain `go test`
// catches a data refresh or generator change without `go generate`.
func TestGeneratedCatalogIsUpToDate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "catalog.json")
	if err := run(dataDir, out); err != nil {
		t.Fatalf("run: %v", err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(committedFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go generate ./internal/catalog/...` and commit the result", committedFile)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	types, prices := readSources(t)
	first, err := generate(types, prices)
	if err != nil {
		t.Fatal(err)
	}
	again, err := generate(types, prices)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Fatal("two runs over the same input differ")
	}
}

func TestGenerateRejectsMalformedInput(t *testing.T) {
	cases := map[string]struct {
		// edit changes the m5.large entry (a JSON object as a map).
		edit func(m map[string]any)
		// extra appends more entries.
		extra func(m map[string]any) []map[string]any
		// prices replaces the pricing document.
		prices string
		// types replaces the instance-types document.
		types string
		want  []string
	}{
		"not json":             {types: `{`, want: []string{"parsing instance-types.json"}},
		"empty list":           {types: `[]`, want: []string{"no instance types"}},
		"unknown field":        {edit: func(m map[string]any) { m["newField"] = 1 }, want: []string{"m5.large", "unknown field newField"}},
		"missing field":        {edit: func(m map[string]any) { delete(m, "cpu") }, want: []string{"m5.large", "field cpu: missing"}},
		"null field":           {edit: func(m map[string]any) { m["memoryMiB"] = nil }, want: []string{"m5.large", "field memoryMiB: must not be null"}},
		"wrong type":           {edit: func(m map[string]any) { m["cpu"] = "two" }, want: []string{"m5.large", "cpu"}},
		"no name":              {edit: func(m map[string]any) { m["name"] = "" }, want: []string{"entry 0", "field name"}},
		"name not family.size": {edit: func(m map[string]any) { m["size"] = "xlarge" }, want: []string{"m5.large", "field name"}},
		"zero cpu":             {edit: func(m map[string]any) { m["cpu"] = 0 }, want: []string{"m5.large", "field cpu: must be > 0"}},
		"bad arch":             {edit: func(m map[string]any) { m["arch"] = "s390x" }, want: []string{"m5.large", "field arch"}},
		"bad hypervisor":       {edit: func(m map[string]any) { m["hypervisor"] = "kvm" }, want: []string{"m5.large", "field hypervisor"}},
		"not linux":            {edit: func(m map[string]any) { m["os"] = "windows" }, want: []string{"m5.large", "field os"}},
		"negative efa":         {edit: func(m map[string]any) { m["efa"] = -1 }, want: []string{"m5.large", "field vpc.amazonaws.com/efa"}},
		"gpu without name": {
			edit: func(m map[string]any) {
				m["gpu"] = map[string]any{"name": "", "manufacturer": "nvidia", "count": 1, "memoryMiB": 1}
			},
			want: []string{"m5.large", "field gpu"},
		},
		"maxPods contradicts vpc limits": {
			edit: func(m map[string]any) { m["maxPods"] = 30 },
			want: []string{"m5.large", "field maxPods: is 30 but vpcLimits give 3 * (10 - 1) + 2 = 29"},
		},
		"resource contradicts count": {
			edit: func(m map[string]any) { m["resources"].(map[string]any)["vpc.amazonaws.com/pod-eni"] = "10" },
			want: []string{"m5.large", "vpc.amazonaws.com/pod-eni is 10 but the entry's own count is 9"},
		},
		"unknown resource": {
			edit: func(m map[string]any) { m["resources"].(map[string]any)["example.com/widget"] = "1" },
			want: []string{"m5.large", "unknown resource example.com/widget"},
		},
		"duplicate": {
			extra: func(m map[string]any) []map[string]any { return []map[string]any{m} },
			want:  []string{"m5.large: duplicate instance type"},
		},
		"price not positive":   {prices: `{"us-east-1":{"m5.large":0}}`, want: []string{"m5.large", "price must be > 0"}},
		"price region missing": {prices: `{"us-west-2":{"m5.large":0.1}}`, want: []string{"region us-east-1: missing"}},
		"price not a number":   {prices: `{"us-east-1":{"m5.large":"cheap"}}`, want: []string{"parsing pricing-on-demand.json"}},
	}
	m5 := m5Large(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var entry map[string]any
			if err := json.Unmarshal(m5, &entry); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(entry)
			}
			entries := []map[string]any{entry}
			if tc.extra != nil {
				entries = append(entries, tc.extra(entry)...)
			}
			types := mustJSON(t, entries)
			if tc.types != "" {
				types = []byte(tc.types)
			}
			prices := []byte(`{"us-east-1":{"m5.large":0.096}}`)
			if tc.prices != "" {
				prices = []byte(tc.prices)
			}
			_, err := generate(types, prices)
			if err == nil {
				t.Fatal("generate succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestGenerateAcceptsOneValidEntry(t *testing.T) {
	types := append(append([]byte("["), m5Large(t)...), ']')
	b, err := generate(types, []byte(`{"us-east-1":{"m5.large":0.096}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"name":"m5.large"`)) || !bytes.Contains(b, []byte(`"onDemandPrice":0.096`)) {
		t.Fatalf("output lacks m5.large or its price:\n%s", b)
	}
}

func readSources(t *testing.T) (types, prices []byte) {
	t.Helper()
	types, err := os.ReadFile(filepath.Join(dataDir, instanceTypesFile))
	if err != nil {
		t.Fatal(err)
	}
	prices, err = os.ReadFile(filepath.Join(dataDir, pricingFile))
	if err != nil {
		t.Fatal(err)
	}
	return types, prices
}

// m5Large returns the source entry of m5.large, a JSON object.
func m5Large(t *testing.T) json.RawMessage {
	t.Helper()
	types, _ := readSources(t)
	var all []json.RawMessage
	if err := json.Unmarshal(types, &all); err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		if bytes.HasPrefix(m, []byte(`{"name":"m5.large"`)) {
			return m
		}
	}
	t.Fatal("m5.large not in the source data")
	return nil
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
