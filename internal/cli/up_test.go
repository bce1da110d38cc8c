package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestUpRejectsBadFlags(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "") // the environment must not fill in the flag
	missing := filepath.Join(t.TempDir(), "missing")
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"unknown flag":          {args: []string{"up", "--bogus"}, wantErr: "unknown flag: --bogus"},
		"port not a number":     {args: []string{"up", "--apiserver-port", "high"}, wantErr: `invalid argument "high" for "--apiserver-port"`},
		"port out of range":     {args: []string{"up", "--apiserver-port", "70000"}, wantErr: "--apiserver-port 70000 is out of range 1-65535"},
		"negative port":         {args: []string{"up", "--apiserver-port=-1"}, wantErr: "--apiserver-port -1 is out of range"},
		"missing bin directory": {args: []string{"up", "--bin-dir", missing}, wantErr: "--bin-dir " + missing + " is not a directory"},
		"unexpected argument":   {args: []string{"up", "now"}, wantErr: `unknown command "now"`},
		"unknown subcommand":    {args: []string{"launch"}, wantErr: `unknown command "launch"`},
		"unknown cloud":         {args: []string{"up", "--cloud", "gce"}, wantErr: `--cloud "gce" is not supported (supported: aws, kwok)`},
		"aws port out of range": {args: []string{"up", "--aws-port", "70000"}, wantErr: "--aws-port 70000 is out of range 0-65535"},
		"controller on an unknown provider": {
			args: []string{"controller", "--cloud-provider", "gce"}, wantErr: `--cloud-provider "gce" is not supported (supported: aws, kwok)`,
		},
		"aws controller without a cluster name": {
			args: []string{"controller", "--cloud-provider", "aws"}, wantErr: "--cluster-name (CLUSTER_NAME) is required with --cloud-provider aws",
		},
		"aws controller with a bad overhead": {
			args:    []string{"controller", "--cloud-provider", "aws", "--cluster-name", "c", "--vm-memory-overhead-percent", "1.5"},
			wantErr: "--vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) 1.5 is not in [0, 1)",
		},
		"demo on an unknown cloud": {args: []string{"demo", "--cloud", "azure"}, wantErr: `--cloud "azure" is not supported`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			root := NewRootCommand(streams)
			root.SetArgs(tc.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Execute(%v) error = %v, want one containing %q", tc.args, err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines; want one line: %q", err)
			}
			if out.Len() != 0 {
				t.Errorf("wrote to stdout on bad input: %q", out.String())
			}
		})
	}
}
