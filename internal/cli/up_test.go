package cli

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
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

// TestPrintUpKwok checks what `dovetail up --cloud kwok` prints: the
// KUBECONFIG and PATH lines and the log directory, and nothing about AWS.
func TestPrintUpKwok(t *testing.T) {
	var b strings.Builder
	if err := printUp(&b, upInfo{Kubeconfig: "/work/admin.kubeconfig", BinDir: "/src/bin", LogDir: "/work/logs"}); err != nil {
		t.Fatal(err)
	}
	want := `Dovetail's local cluster is up. In another terminal:

  export KUBECONFIG=/work/admin.kubeconfig
  export PATH=/src/bin:$PATH   # kubectl
  kubectl get nodepools,nodeclaims,nodes -o wide

Component logs are in /work/logs. Press Ctrl-C to stop and clean up.
`
	if b.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestPrintUpAWS checks what `dovetail up --cloud aws` prints, then uses
// the printed endpoint URL, credentials and region, as a user of the AWS
// CLI would, with the SDK against a real local AWS endpoint.
func TestPrintUpAWS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server, err := localaws.Start(ctx, localaws.Config{ClusterName: "printed"})
	if err != nil {
		t.Fatalf("starting the local AWS endpoint: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Stop(); err != nil {
			t.Errorf("stopping the local AWS endpoint: %v", err)
		}
	})
	var b strings.Builder
	info := upInfo{Kubeconfig: "/work/admin.kubeconfig", BinDir: "/src/bin", LogDir: "/work/logs",
		AWS: &upAWSInfo{URL: server.URL(), Region: server.Region(), ClusterName: server.ClusterName()}}
	if err := printUp(&b, info); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"  export KUBECONFIG=/work/admin.kubeconfig\n",
		"The local AWS endpoint (region us-east-1, cluster printed) answers the AWS CLI too:\n",
		"  aws --endpoint-url " + server.URL() + " ec2 describe-instances\n",
		"\nComponent logs are in /work/logs. Press Ctrl-C to stop and clean up.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printed:\n%s\nwant it to contain %q", out, want)
		}
	}
	env := regexp.MustCompile(`(?m)^  export AWS_ACCESS_KEY_ID=(\S+) AWS_SECRET_ACCESS_KEY=(\S+) AWS_REGION=(\S+)$`).FindStringSubmatch(out)
	endpoint := regexp.MustCompile(`(?m)^  aws --endpoint-url (\S+) `).FindStringSubmatch(out)
	if env == nil || endpoint == nil {
		t.Fatalf("printed:\n%s\nwant the AWS_* export line and the aws --endpoint-url line", out)
	}
	client := awsec2.New(awsec2.Options{
		Region:       env[3],
		Credentials:  credentials.NewStaticCredentialsProvider(env[1], env[2], ""),
		BaseEndpoint: aws.String(endpoint[1]),
		HTTPClient:   &http.Client{Timeout: time.Minute, Transport: awsclient.BufferRequestBodies(nil)},
	})
	if _, err := client.DescribeInstances(ctx, &awsec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("DescribeInstances with the printed endpoint and credentials: %v", err)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed pipe") }

// TestPrintUpReportsWriteErrors checks a failed write is returned, wrapped.
func TestPrintUpReportsWriteErrors(t *testing.T) {
	if err := printUp(failingWriter{}, upInfo{}); err == nil || !strings.Contains(err.Error(), "closed pipe") {
		t.Errorf("printUp to a failing writer = %v, want the write error", err)
	}
}

// TestUpHelpNamesBothNodeClasses checks --no-default-nodepool's help names
// the NodeClass of each cloud.
func TestUpHelpNamesBothNodeClasses(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	usage := NewUpCommand(streams).Flags().Lookup("no-default-nodepool").Usage
	for _, kind := range []string{"EC2NodeClass", "KWOKNodeClass", "NodePool"} {
		if !strings.Contains(usage, kind) {
			t.Errorf("--no-default-nodepool help %q does not name %s", usage, kind)
		}
	}
}
