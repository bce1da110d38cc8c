package settings

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/pflag"

	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

func valid() Settings {
	return Settings{ClusterName: "dovetail", VMMemoryOverheadPercent: 0.075, MaxAttempts: 3, Region: "us-east-1"}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		change  func(*Settings)
		wantErr string
	}{
		"valid":                {change: func(*Settings) {}},
		"no cluster name":      {change: func(s *Settings) { s.ClusterName = " " }, wantErr: "--cluster-name (CLUSTER_NAME) is required"},
		"overhead of 1":        {change: func(s *Settings) { s.VMMemoryOverheadPercent = 1 }, wantErr: "VM_MEMORY_OVERHEAD_PERCENT"},
		"negative ENIs":        {change: func(s *Settings) { s.ReservedENIs = -1 }, wantErr: "RESERVED_ENIS"},
		"no attempts":          {change: func(s *Settings) { s.MaxAttempts = 0 }, wantErr: "AWS_MAX_ATTEMPTS"},
		"endpoint not a URL":   {change: func(s *Settings) { s.ClusterEndpoint = "kube.local:443" }, wantErr: "CLUSTER_ENDPOINT"},
		"aws endpoint not URL": {change: func(s *Settings) { s.EndpointURL = "ftp://x" }, wantErr: "AWS_ENDPOINT_URL"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := valid()
			tc.change(&s)
			err := s.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.wantErr)
			}
		})
	}
}

func TestFlagDefaults(t *testing.T) {
	var s Settings
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	s.AddFlags(fs)
	if err := fs.Parse([]string{"--cluster-name=c1"}); err != nil {
		t.Fatal(err)
	}
	if s.ClusterName != "c1" || s.VMMemoryOverheadPercent != 0.075 || s.ReservedENIs != 0 || s.MaxAttempts != 5 {
		t.Fatalf("settings after parsing = %+v", s)
	}
}

// TestThrottlesAreRetriedAndCounted sends DescribeSubnets to a local EC2
// endpoint that throttles every request: the SDK retries it MaxAttempts
// times, each retry is counted, and the call fails with RequestLimitExceeded.
func TestThrottlesAreRetriedAndCounted(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLOCAL")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	svc := localec2.New(localec2.Config{})
	svc.SetThrottle(1)
	server := httptest.NewServer(svc)
	defer server.Close()

	s := valid()
	s.EndpointURL = server.URL
	throttles := ThrottlesMetric()
	cfg, err := s.LoadConfig(context.Background(), throttles)
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.Retryer
	cfg.Retryer = func() aws.Retryer { return noDelay{base()} }
	_, err = ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "RequestLimitExceeded" {
		t.Fatalf("DescribeSubnets error = %v, want RequestLimitExceeded", err)
	}
	if got := testutil.ToFloat64(throttles.WithLabelValues("RequestLimitExceeded")); got != float64(s.MaxAttempts) {
		t.Fatalf("throttles counted = %v, want %d (one per attempt, the last one too)", got, s.MaxAttempts)
	}
}

func TestLoadConfigNeedsARegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s := valid()
	s.Region = ""
	if _, err := s.LoadConfig(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("LoadConfig() error = %v, want one naming AWS_REGION", err)
	}
}

// noDelay keeps the retries but not their backoff, so the test is quick.
type noDelay struct{ aws.Retryer }

func (n noDelay) RetryDelay(attempt int, err error) (delay time.Duration, _ error) {
	_, err2 := n.Retryer.RetryDelay(attempt, err)
	return 0, err2
}

// The Price List API has endpoints in four regions only: a controller
// elsewhere must ask the one that serves its region, or every refresh fails
// and the embedded prices stay in use for good.
func TestPricingClientAsksTheRegionThatServesIt(t *testing.T) {
	cases := map[string]string{
		"us-east-1":      "us-east-1",
		"us-west-2":      "us-east-1",
		"eu-west-1":      "eu-central-1",
		"ap-northeast-1": "ap-south-1",
		"cn-north-1":     "cn-northwest-1",
	}
	for region, want := range cases {
		clients := NewClients(aws.Config{Region: region})
		if got := clients.Pricing.(*pricing.Client).Options().Region; got != want {
			t.Errorf("region %s: Pricing client region = %q, want %q", region, got, want)
		}
		if got := clients.EC2.(*ec2.Client).Options().Region; got != region {
			t.Errorf("region %s: EC2 client region = %q, want the controller's", region, got)
		}
	}
}
