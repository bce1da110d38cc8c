package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goodProvisioner = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: good
spec:
  providerRef:
    name: default
  ttlSecondsAfterEmpty: 30
`

// TestBadInput checks that bad input gets an error naming the file, the
// document, the line and the field; that without ContinueOnError there is no
// output at all; and that with it the other documents are converted.
func TestBadInput(t *testing.T) {
	t.Parallel()
	provisioner := func(spec string) string {
		return "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: bad\nspec:\n  providerRef:\n    name: default\n" + spec
	}
	cases := map[string]struct {
		input   string
		opts    Options
		wantErr []string
	}{
		"not YAML": {
			input:   "apiVersion: v1\nkind: ConfigMap\ndata: [a, b\n",
			wantErr: []string{`in.yaml: document 2 (line 12): not valid YAML: did not find expected ',' or ']'`},
		},
		"a duplicate key": {
			input:   provisioner("  weight: 1\n  weight: 2\n"),
			wantErr: []string{`in.yaml: document 2 (line 18): not valid YAML: key "weight" already set in map`},
		},
		"an unknown Provisioner field": {
			input:   provisioner("  ttlSecondsAfterEmty: 30\n"),
			wantErr: []string{`in.yaml: document 2 (line 17): Provisioner "bad": spec.ttlSecondsAfterEmty: Forbidden: unknown field`},
		},
		"a wrongly typed field": {
			input:   provisioner("  weight: ten\n"),
			wantErr: []string{`in.yaml: document 2 (line 17): Provisioner "bad": spec.weight: Invalid value: `, `spec.weight: Invalid value: must be int32, not string`},
		},
		"a weight out of range": {
			input:   provisioner("  weight: 1000\n"),
			wantErr: []string{`in.yaml: document 2 (line 17): Provisioner "bad": spec.weight: Invalid value: 1000: spec.weight in body should be less than or equal to 100`},
		},
		"an unknown requirement operator": {
			input:   provisioner("  requirements:\n  - key: kubernetes.io/arch\n    operator: Within\n    values: [amd64]\n"),
			wantErr: []string{`in.yaml: document 2 (line 19): Provisioner "bad": spec.requirements[0].operator: Unsupported value: "Within"`},
		},
		"a restricted label": {
			input:   provisioner("  labels:\n    kubernetes.io/hostname: x\n"),
			wantErr: []string{`in.yaml: document 2 (line 17): Provisioner "bad": spec.labels: Invalid value: `, `label "kubernetes.io/hostname" is restricted`},
		},
		"a negative TTL": {
			input:   provisioner("  ttlSecondsUntilExpired: -5\n"),
			wantErr: []string{`in.yaml: document 2 (line 17): Provisioner "bad": spec.ttlSecondsUntilExpired: Invalid value: -5: must be greater than or equal to 0`},
		},
		"consolidation with ttlSecondsAfterEmpty": {
			input:   provisioner("  consolidation:\n    enabled: true\n  ttlSecondsAfterEmpty: 30\n"),
			wantErr: []string{`Provisioner "bad": spec.ttlSecondsAfterEmpty: Invalid value: 30: cannot be combined with spec.consolidation.enabled: true`},
		},
		"an inline provider with an unknown field": {
			input:   "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: bad\nspec:\n  provider:\n    subnetSelector: {a: b}\n    securityGroupSelector: {a: b}\n    amiFamly: AL2\n",
			wantErr: []string{`in.yaml: document 2 (line 18): Provisioner "bad": spec.provider.amiFamly: Forbidden: unknown field`},
		},
		"an AWSNodeTemplate without subnets": {
			input:   "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n  name: bad\nspec:\n  securityGroupSelector: {a: b}\n",
			wantErr: []string{`in.yaml: document 2 (line 14): AWSNodeTemplate "bad": spec.subnetSelector: Required value`},
		},
		"a selector that expands to too many terms": {
			input:   "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n  name: bad\nspec:\n  subnetSelector: {a: \"1,2,3,4,5,6\", b: \"1,2,3,4,5,6\"}\n  securityGroupSelector: {a: b}\n",
			wantErr: []string{`in.yaml: document 2 (line 15): AWSNodeTemplate "bad": spec.subnetSelector: Too many: 31: expands to more than 30 selector terms`},
		},
		"a v1beta1 NodePool breaking a CEL rule": {
			input: "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: bad\nspec:\n  disruption:\n    consolidationPolicy: WhenEmpty\n" +
				"  template:\n    spec:\n      nodeClassRef: {name: default}\n      requirements: []\n",
			wantErr: []string{`in.yaml: document 2 (line 15): NodePool "bad": spec.disruption: Invalid value: `, `consolidateAfter must be specified with consolidationPolicy=WhenEmpty`},
		},
		"a document without a name": {
			input:   "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nspec:\n  providerRef: {name: default}\n",
			wantErr: []string{`in.yaml: document 2 (line 10): Provisioner "": metadata.name: Required value`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The bad document is the second, starting on line 10.
			input := goodProvisioner + "---\n" + tc.input
			got, err := convert(t, tc.opts, Input{Source: "in.yaml", Data: []byte(input)})
			if err == nil {
				t.Fatalf("Convert() succeeded, want an error; output:\n%s", got.Output)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n  %s\ndoes not contain\n  %s", err, want)
				}
			}
			if len(got.Output) != 0 {
				t.Errorf("Convert() wrote output despite the error:\n%s", got.Output)
			}

			tc.opts.ContinueOnError = true
			got, err = convert(t, tc.opts, Input{Source: "in.yaml", Data: []byte(input)})
			if err == nil {
				t.Fatal("Convert() with ContinueOnError succeeded, want the error still reported")
			}
			if got.Converted != 1 || !strings.Contains(string(got.Output), "name: good") || strings.Contains(string(got.Output), "name: bad") {
				t.Errorf("with ContinueOnError got %d converted:\n%s\nwant only the good document", got.Converted, got.Output)
			}
		})
	}
}

func TestUnknownTarget(t *testing.T) {
	t.Parallel()
	_, err := convert(t, Options{To: "v2"}, Input{Source: "in.yaml", Data: []byte(goodProvisioner)})
	if diff := cmp.Diff(`unknown target version "v2": want v1 or v1beta1`, errString(err)); diff != "" {
		t.Error(diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
