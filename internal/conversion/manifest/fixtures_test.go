package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"
)

// fixtureDir holds the karpenter-convert fixtures (see testdata/README.md).
const fixtureDir = "../../../test/conformance/karpenter-convert"

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return data
}

// validAMITerms is what Dovetail writes for the fixtures' amiSelector
// {aws::ids: "ami-123,ami-456", aws::owners, aws::name, tags}: one term per id.
// karpenter-convert wrote every id beside the name, owner and tags, which the
// v1beta1 API rejects ("'id' is mutually exclusive").
const validAMITerms = "  amiSelectorTerms:\n  - id: ami-123\n  - id: ami-456\n"

// replaceBlock replaces, in a YAML document, the block that starts with the
// line header (at two spaces of indentation) and ends before the next key at
// the same indentation.
func replaceBlock(t *testing.T, doc []byte, header, with string) []byte {
	t.Helper()
	start := bytes.Index(doc, []byte(header))
	if start < 0 {
		t.Fatalf("no %q in the expected output", header)
	}
	end := start + len(header)
	for end < len(doc) {
		next := bytes.IndexByte(doc[end:], '\n') + end + 1
		if next <= end || next >= len(doc) {
			end = len(doc)
			break
		}
		line := doc[next:]
		end = next
		if len(line) > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ' && line[2] != '-' {
			break
		}
	}
	return append(append(bytes.Clone(doc[:start]), with...), doc[end:]...)
}

// TestKarpenterConvertFixtures runs the pairs karpenter-convert's suite
// checked, byte for byte, with --to v1beta1 (the tool's only target). Where
// the expected output is invalid against the v1beta1 API, adjust turns it into
// the valid output Dovetail writes instead, and deviation says why
// (docs/migration.md lists the same).
func TestKarpenterConvertFixtures(t *testing.T) {
	t.Parallel()
	amiIDsOnly := func(t *testing.T, want []byte) []byte {
		return replaceBlock(t, want, "  amiSelectorTerms:\n", validAMITerms)
	}
	cases := map[string]struct {
		input, expected string
		ignoreDefaults  bool
		deviation       string
		adjust          func(*testing.T, []byte) []byte
	}{
		"full Provisioner": {input: "provisioner.yaml", expected: "nodepool.yaml"},
		"Provisioner defaults are added": {
			input: "provisioner_defaults.yaml", expected: "nodepool_defaults.yaml",
		},
		"no defaults with --ignore-defaults": {
			input: "provisioner_no_defaults.yaml", expected: "nodepool_no_defaults.yaml", ignoreDefaults: true,
			deviation: "requirements: null is pruned by the API server and then fails 'Required value'; [] is valid",
			adjust: func(t *testing.T, want []byte) []byte {
				return bytes.Replace(want, []byte("requirements: null"), []byte("requirements: []"), 1)
			},
		},
		"kubectl get output": {
			input: "provisioner_kubectl_output.yaml", expected: "nodepool_kubectl_output.yaml", ignoreDefaults: true,
		},
		"AWSNodeTemplate with amiSelector filters": {
			input: "nodetemplate.yaml", expected: "nodeclass.yaml",
			deviation: "v1beta1 rejects an amiSelectorTerm with id beside name, owner or tags", adjust: amiIDsOnly,
		},
		"no amiFamily means AL2": {input: "nodetemplate_no_amifamily.yaml", expected: "nodeclass_no_amifamily.yaml"},
		"AWSNodeTemplate kubectl get output": {
			input: "nodetemplate_kubectl_output.yaml", expected: "nodeclass_kubectl_output.yaml",
		},
		"comma-separated security group tags": {
			input: "nodetemplate_cdl_securityGroupSelectors_tags.yaml", expected: "nodeclass_cdl_securityGroupSelectors_tags_output.yaml",
			deviation: "v1beta1 rejects an amiSelectorTerm with id beside name, owner or tags", adjust: amiIDsOnly,
		},
		"comma-separated subnet tags": {
			input: "nodetemplate_cdl_subnetSelectors_tags.yaml", expected: "nodeclass_cdl_subnetSelectors_tags_output.yaml",
			deviation: "v1beta1 rejects an amiSelectorTerm with id beside name, owner or tags", adjust: amiIDsOnly,
		},
		"comma-separated AMI tags beside ids": {
			input: "nodetemplate_cdl_amiSelectors_tags.yaml", expected: "nodeclass_cdl_amiSelectors_tags_output.yaml",
			deviation: "v1beta1 rejects an amiSelectorTerm with id beside name, owner or tags", adjust: amiIDsOnly,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := readFixture(t, tc.expected)
			if tc.adjust != nil {
				adjusted := tc.adjust(t, want)
				if bytes.Equal(adjusted, want) {
					t.Fatalf("the deviation %q no longer changes the expected output; remove it", tc.deviation)
				}
				want = adjusted
			}
			got, err := convert(t, Options{To: TargetV1beta1, IgnoreDefaults: tc.ignoreDefaults}, Input{Source: tc.input, Data: readFixture(t, tc.input)})
			if err != nil {
				t.Fatalf("Convert() error: %v", err)
			}
			if diff := cmp.Diff(string(want), string(got.Output)); diff != "" {
				t.Errorf("Convert() output (-want +got):\n%s", diff)
			}
			if got.Converted != 1 || got.PassedThrough != 0 {
				t.Errorf("Convert() converted %d, passed through %d; want 1, 0", got.Converted, got.PassedThrough)
			}
		})
	}
}

// TestKarpenterConvertDeviationsAreInvalid proves that the expected outputs
// Dovetail does not reproduce are rejected by the v1beta1 CRD, with the
// reason the deviation gives.
func TestKarpenterConvertDeviationsAreInvalid(t *testing.T) {
	t.Parallel()
	shared, err := sharedConverter()
	if err != nil {
		t.Fatal(err)
	}
	s := shared.schemas
	cases := map[string]string{
		"nodepool_no_defaults.yaml":                             "spec.template.spec.requirements: Required value",
		"nodeclass.yaml":                                        "spec.amiSelectorTerms[0]: Invalid value: 'id' is mutually exclusive",
		"nodeclass_cdl_amiSelectors_tags_output.yaml":           "spec.amiSelectorTerms[0]: Invalid value: 'id' is mutually exclusive",
		"nodeclass_cdl_securityGroupSelectors_tags_output.yaml": "spec.amiSelectorTerms[0]: Invalid value: 'id' is mutually exclusive",
		"nodeclass_cdl_subnetSelectors_tags_output.yaml":        "spec.amiSelectorTerms[0]: Invalid value: 'id' is mutually exclusive",
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := map[string]any{}
			if err := sigsyaml.Unmarshal(readFixture(t, name), &m); err != nil {
				t.Fatal(err)
			}
			data, _ := sigsyaml.Marshal(m)
			obj, err := yamlToMap(data)
			if err != nil {
				t.Fatal(err)
			}
			errs, err := s.validate(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(errs.ToAggregate().Error(), want) {
				t.Errorf("validation errors %v, want one containing %q", errs, want)
			}
		})
	}
}

// TestKarpenterConvertUnknownKind: karpenter-convert skipped documents of
// other kinds; Dovetail passes them through unchanged (a manifest directory
// often mixes Deployments with Provisioners), so the output is the unknown
// document followed by the expected NodePool.
func TestKarpenterConvertUnknownKind(t *testing.T) {
	t.Parallel()
	unknown := readFixture(t, "unknown_kind.yaml")
	got, err := convert(t, Options{To: TargetV1beta1},
		Input{Source: "unknown_kind.yaml", Data: unknown},
		Input{Source: "provisioner.yaml", Data: readFixture(t, "provisioner.yaml")})
	if err != nil {
		t.Fatalf("ConvertAll() error: %v", err)
	}
	want := string(unknown) + "\n---\n" + string(readFixture(t, "nodepool.yaml"))
	if diff := cmp.Diff(want, string(got.Output)); diff != "" {
		t.Errorf("ConvertAll() output (-want +got):\n%s", diff)
	}
	if got.Converted != 1 || got.PassedThrough != 1 {
		t.Errorf("ConvertAll() converted %d, passed through %d; want 1, 1", got.Converted, got.PassedThrough)
	}
}

// TestKarpenterConvertLaunchTemplate: the tool's exact message is part of the
// error, which also names the file, document, line and field. It goes through
// the package-level Convert, which compiles its own schemas.
func TestKarpenterConvertLaunchTemplate(t *testing.T) {
	t.Parallel()
	got, err := Convert(readFixture(t, "nodetemplate_launch_template_name.yaml"), "nodetemplate_launch_template_name.yaml", Options{})
	if err == nil {
		t.Fatal("Convert() succeeded, want an error")
	}
	for _, want := range []string{
		`converting AWSNodeTemplate, cannot convert with "spec.launchTemplate"`,
		`nodetemplate_launch_template_name.yaml: document 1 (line 8): AWSNodeTemplate "default": spec.launchTemplate: `,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if len(got.Output) != 0 {
		t.Errorf("Convert() wrote output on error:\n%s", got.Output)
	}
}

// TestKarpenterConvertProvider checks the Provisioner with an inline provider
// against the hand-written expectation the upstream suite never read. The
// NodePool matches; the EC2NodeClass keeps the provider's instanceProfile
// (v1beta1 accepts it, so no role placeholder is needed) instead of the
// placeholder role the file shows.
func TestKarpenterConvertProvider(t *testing.T) {
	t.Parallel()
	got, err := convert(t, Options{To: TargetV1beta1}, Input{Source: "provisioner_provider.yaml", Data: readFixture(t, "provisioner_provider.yaml")})
	if err != nil {
		t.Fatalf("Convert() error: %v", err)
	}
	want := splitYAML(t, readFixture(t, "nodepool_nodeclass_provider_combined.yaml"))
	class := want[1]["spec"].(map[string]any)
	delete(class, "role")
	class["instanceProfile"] = "KarpenterInstanceProfile-karpenter-demo"
	if diff := cmp.Diff(want, splitYAML(t, got.Output)); diff != "" {
		t.Errorf("Convert() (-want +got):\n%s", diff)
	}
}

// splitYAML decodes every document of a stream.
func splitYAML(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, c := range SplitDocuments(data) {
		m := map[string]any{}
		if err := sigsyaml.Unmarshal(c.Text, &m); err != nil {
			t.Fatalf("decoding %s: %v", c.Text, err)
		}
		out = append(out, m)
	}
	return out
}
