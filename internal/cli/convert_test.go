package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

const provisioner = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
  ttlSecondsAfterEmpty: 30
  ttlSecondsUntilExpired: 2592000
`

const nodePoolV1beta1 = `apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: default
spec:
  disruption:
    consolidateAfter: 30s
    consolidationPolicy: WhenEmpty
    expireAfter: 720h0m0s
  template:
    spec:
      nodeClassRef:
        name: default
      requirements:
      - key: kubernetes.io/os
        operator: In
        values:
        - linux
      - key: kubernetes.io/arch
        operator: In
        values:
        - amd64
      - key: karpenter.sh/capacity-type
        operator: In
        values:
        - on-demand
      - key: karpenter.k8s.aws/instance-category
        operator: In
        values:
        - c
        - m
        - r
      - key: karpenter.k8s.aws/instance-generation
        operator: Gt
        values:
        - "2"
`

const nodeTemplate = `apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: default
spec:
  subnetSelector: {karpenter.sh/discovery: demo}
  securityGroupSelector: {karpenter.sh/discovery: demo}
`

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"

// writeTree writes files (path -> content) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestConvertCommand(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		files      map[string]string
		stdin      string
		args       []string // "DIR" is replaced by the temporary directory
		wantOut    string   // exact, unless empty and wantOutHas is set
		wantOutHas []string
		wantErrOut []string // substrings of standard error
		wantErr    string   // substring of the returned error; "" means success
		oneLine    bool     // standard error is the one line "Error: <wantErr...>"
	}{
		"a file to v1beta1, as karpenter-convert": {
			files:   map[string]string{"p.yaml": provisioner},
			args:    []string{"-f", "DIR/p.yaml", "--to", "v1beta1"},
			wantOut: nodePoolV1beta1,
		},
		"standard input, v1 by default": {
			stdin:      provisioner,
			args:       []string{"-f", "-"},
			wantOutHas: []string{"apiVersion: karpenter.sh/v1\n", "expireAfter: 720h0m0s"},
		},
		"a directory: only manifest files, not subdirectories": {
			files:   map[string]string{"a.yaml": provisioner, "b.txt": "not yaml: [", "sub/c.yml": configMap},
			args:    []string{"-f", "DIR", "--to", "v1beta1"},
			wantOut: nodePoolV1beta1,
		},
		"a directory with -R, in lexical order": {
			files:   map[string]string{"a.yaml": provisioner, "sub/c.yml": configMap},
			args:    []string{"-R", "-f", "DIR", "--to=v1beta1"},
			wantOut: nodePoolV1beta1 + "---\n" + configMap,
		},
		"the role placeholder warning goes to standard error": {
			files:      map[string]string{"t.yaml": nodeTemplate},
			args:       []string{"--filename", "DIR/t.yaml"},
			wantOutHas: []string{"role: $KARPENTER_NODE_ROLE"},
			wantErrOut: []string{`Warning: DIR/t.yaml: document 1: AWSNodeTemplate "default": spec.role is the placeholder $KARPENTER_NODE_ROLE`},
		},
		"--ignore-defaults": {
			stdin:      provisioner,
			args:       []string{"-f", "-", "--ignore-defaults"},
			wantOutHas: []string{"requirements: []"},
		},
		"a bad document: error with file, document, line and field, and no output": {
			files:   map[string]string{"p.yaml": provisioner + "---\n" + strings.Replace(provisioner, "ttlSecondsAfterEmpty: 30", "weight: 1000", 1)},
			args:    []string{"-f", "DIR/p.yaml"},
			wantOut: "",
			wantErr: `DIR/p.yaml: document 2 (line 18): Provisioner "default": spec.weight: Invalid value: 1000`,
		},
		"--continue-on-error converts the rest and still fails": {
			files:      map[string]string{"p.yaml": "a: [\n---\n" + provisioner},
			args:       []string{"-f", "DIR/p.yaml", "--continue-on-error", "--to", "v1beta1"},
			wantOutHas: []string{"kind: NodePool"},
			wantErr:    `DIR/p.yaml: document 1 (line 1): not valid YAML`,
		},
		"a missing file": {
			args:    []string{"-f", "DIR/missing.yaml"},
			wantErr: "reading DIR/missing.yaml: no such file or directory",
		},
		"no -f": {
			args:    []string{"--to", "v1"},
			wantErr: "no input: give files or directories with -f",
		},
		"a bad --to": {
			stdin:   provisioner,
			args:    []string{"-f", "-", "--to", "v2"},
			wantErr: `--to must be v1 or v1beta1, not "v2"`,
			oneLine: true,
		},
		"an unknown flag": {
			args:    []string{"-f", "-", "--output", "json"},
			wantErr: "unknown flag: --output",
			oneLine: true,
		},
		"an argument": {
			args:    []string{"p.yaml"},
			wantErr: `unknown command "p.yaml" for "convert"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tc.files)
			streams, in, out, errOut := genericiooptions.NewTestIOStreams()
			in.WriteString(tc.stdin)
			cmd := NewConvertCommand(streams)
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "DIR", dir))
			}
			cmd.SetArgs(args)
			err := cmd.Execute()

			undir := func(s string) string { return strings.ReplaceAll(s, dir, "DIR") }
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Execute() error: %v\nstderr: %s", err, errOut)
			case tc.wantErr != "" && (err == nil || !strings.Contains(undir(err.Error()), tc.wantErr)):
				t.Fatalf("Execute() error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.oneLine {
				if got := errOut.String(); got != "Error: "+tc.wantErr+"\n" {
					t.Errorf("stderr = %q, want the one line %q", got, "Error: "+tc.wantErr)
				}
			}
			if tc.wantOut != "" || len(tc.wantOutHas) == 0 {
				if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			}
			for _, want := range tc.wantOutHas {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, want := range tc.wantErrOut {
				if !strings.Contains(undir(errOut.String()), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
		})
	}
}

// TestConvertStdinOnce: "-" twice reads standard input once.
func TestConvertStdinOnce(t *testing.T) {
	t.Parallel()
	streams, in, _, _ := genericiooptions.NewTestIOStreams()
	in.WriteString(configMap)
	o := NewConvertOptions(streams)
	o.Filenames = []string{"-", "-"}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if len(o.inputs) != 1 || !bytes.Equal(o.inputs[0].Data, []byte(configMap)) || o.inputs[0].Source != "<stdin>" {
		t.Errorf("inputs = %+v", o.inputs)
	}
}
