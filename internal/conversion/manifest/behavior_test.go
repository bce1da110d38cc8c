package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGolden converts inputs to each target version and compares output and
// warnings with the files under testdata/golden (DOVETAIL_UPDATE_GOLDEN=1
// rewrites them). Together they show the documented output format and every
// rule on whole files: the karpenter-convert inputs to v1, and a v1alpha5
// cluster (Provisioner, AWSNodeTemplate, a kubectl List with a Machine, a
// Deployment) to v1 and to v1beta1.
func TestGolden(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		inputs []string
		opts   Options
	}{
		"migration.v1":           {inputs: []string{"testdata/migration/cluster.yaml"}},
		"migration.v1beta1":      {inputs: []string{"testdata/migration/cluster.yaml"}, opts: Options{To: TargetV1beta1}},
		"migration.v1.roundtrip": {inputs: []string{"testdata/golden/migration.v1beta1.yaml"}},
		"provisioner.v1":         {inputs: []string{"../../../test/conformance/karpenter-convert/provisioner.yaml"}},
		"provisioner_defaults.v1": {
			inputs: []string{"../../../test/conformance/karpenter-convert/provisioner_defaults.yaml"},
		},
		"provisioner_provider.v1": {inputs: []string{"../../../test/conformance/karpenter-convert/provisioner_provider.yaml"}},
		"nodetemplate.v1":         {inputs: []string{"../../../test/conformance/karpenter-convert/nodetemplate.yaml"}},
		"provisioner+nodetemplate.v1": {
			inputs: []string{"../../../test/conformance/karpenter-convert/provisioner.yaml", "../../../test/conformance/karpenter-convert/nodetemplate_cdl_subnetSelectors_tags.yaml"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var inputs []Input
			for _, file := range tc.inputs {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, Input{Source: filepath.Base(file), Data: data})
			}
			got, err := convert(t, tc.opts, inputs...)
			if err != nil {
				t.Fatalf("ConvertAll() error: %v", err)
			}
			checkGolden(t, name+".yaml", got.Output)
			checkGolden(t, name+".warnings", []byte(strings.Join(got.Warnings, "\n")+"\n"))
		})
	}
}

// TestMigrationRoundTrip: converting the v1beta1 output to v1 gives what
// converting straight to v1 gives, apart from the warnings.
func TestMigrationRoundTrip(t *testing.T) {
	t.Parallel()
	direct, err := os.ReadFile("testdata/golden/migration.v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	viaV1beta1, err := os.ReadFile("testdata/golden/migration.v1.roundtrip.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(direct), string(viaV1beta1)); diff != "" {
		t.Errorf("v1alpha5 -> v1 and v1alpha5 -> v1beta1 -> v1 differ (-direct +via v1beta1):\n%s", diff)
	}
}
