package localaws

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	awsiam "github.com/aws/aws-sdk-go-v2/service/iam"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	awsssm "github.com/aws/aws-sdk-go-v2/service/ssm"
	testclock "k8s.io/utils/clock/testing"
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// start runs a server on a fake clock and returns it with its SDK config.
func start(t *testing.T, cfg Config) (*Server, aws.Config, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	awsCfg, err := s.AWSConfig(ctx)
	if err != nil {
		t.Fatalf("AWS config: %v", err)
	}
	return s, awsCfg, clk
}

// TestEveryServiceThroughItsSDKClient reaches each service with its real
// SDK client through the one URL, which proves the routing by credential
// scope.
func TestEveryServiceThroughItsSDKClient(t *testing.T) {
	s, cfg, _ := start(t, Config{ClusterName: "demo", ClusterEndpoint: "https://demo.example:443", ClusterCA: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")})
	ctx := context.Background()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %s is not on the loopback interface", s.URL())
	}

	subnets, err := awsec2.NewFromConfig(cfg).DescribeSubnets(ctx, &awsec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) != 3 {
		t.Errorf("ec2 DescribeSubnets: %+v, %v; want 3 subnets", subnets, err)
	}
	role, err := awsiam.NewFromConfig(cfg).GetRole(ctx, &awsiam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-demo")})
	if err != nil || aws.ToString(role.Role.RoleName) != "KarpenterNodeRole-demo" {
		t.Errorf("iam GetRole: %+v, %v", role, err)
	}
	latest, _ := s.LatestAMI(FamilyAL2023, VariantStandard, ArchX86_64)
	param, err := awsssm.NewFromConfig(cfg).GetParameter(ctx, &awsssm.GetParameterInput{Name: aws.String(latest.AliasParameter)})
	if err != nil || aws.ToString(param.Parameter.Value) != latest.Image.ID {
		t.Errorf("ssm GetParameter(%s): %+v, %v; want %s", latest.AliasParameter, param, err, latest.Image.ID)
	}
	products, err := awspricing.NewFromConfig(cfg).GetProducts(ctx, &awspricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")},
			{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("capacitystatus"), Value: aws.String("Used")}},
	})
	if err != nil || len(products.PriceList) != 1 {
		t.Errorf("pricing GetProducts: %+v, %v; want 1 product", products, err)
	}
	queue, err := awssqs.NewFromConfig(cfg).GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String("demo")})
	if err != nil || aws.ToString(queue.QueueUrl) != s.Seed().InterruptionQueueURL {
		t.Errorf("sqs GetQueueUrl: %+v, %v; want %s", queue, err, s.Seed().InterruptionQueueURL)
	}
	cluster, err := awseks.NewFromConfig(cfg).DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String("demo")})
	if err != nil {
		t.Fatalf("eks DescribeCluster: %v", err)
	}
	if got := aws.ToString(cluster.Cluster.Endpoint); got != "https://demo.example:443" {
		t.Errorf("eks endpoint %s", got)
	}
	if got := aws.ToString(cluster.Cluster.Version); got != DefaultKubernetesVersion {
		t.Errorf("eks version %s, want %s", got, DefaultKubernetesVersion)
	}
	if got := aws.ToString(cluster.Cluster.KubernetesNetworkConfig.ServiceIpv4Cidr); got != DefaultServiceCIDR {
		t.Errorf("eks service CIDR %s", got)
	}
}

// TestUnsignedRequestsAreRefusedByTheirService sends each service's request
// shape without a signature: the service it looks like refuses it, in that
// service's own error format.
func TestUnsignedRequestsAreRefusedByTheirService(t *testing.T) {
	s, _, _ := start(t, Config{})
	cases := []struct {
		name, method, path, contentType, target, body string
		status                                        int
		want                                          []string // substrings of the body, or "header:<name>"
	}{
		{name: "ec2", method: http.MethodPost, path: "/", contentType: "application/x-www-form-urlencoded",
			body: "Action=DescribeSubnets&Version=2016-11-15", status: http.StatusForbidden,
			want: []string{"<Response><Errors><Error><Code>MissingAuthenticationToken</Code>"}},
		{name: "iam", method: http.MethodPost, path: "/", contentType: "application/x-www-form-urlencoded; charset=utf-8",
			body: "Action=GetRole&RoleName=x&Version=2010-05-08", status: http.StatusForbidden,
			want: []string{"<ErrorResponse", "MissingAuthenticationToken"}},
		{name: "ssm", method: http.MethodPost, path: "/", contentType: "application/x-amz-json-1.1", target: "AmazonSSM.GetParameter",
			body: `{"Name":"/a"}`, status: http.StatusForbidden, want: []string{"MissingAuthenticationTokenException", "ctype:application/x-amz-json-1.1"}},
		{name: "pricing", method: http.MethodPost, path: "/", contentType: "application/x-amz-json-1.1", target: "AWSPriceListService.GetProducts",
			body: `{"ServiceCode":"AmazonEC2"}`, status: http.StatusForbidden, want: []string{"MissingAuthenticationTokenException"}},
		{name: "sqs", method: http.MethodPost, path: "/", contentType: "application/x-amz-json-1.0", target: "AmazonSQS.GetQueueUrl",
			body: `{"QueueName":"dovetail"}`, status: http.StatusForbidden, want: []string{"MissingAuthenticationTokenException", "ctype:application/x-amz-json-1.0"}},
		{name: "eks", method: http.MethodGet, path: "/clusters/dovetail", status: http.StatusForbidden,
			want: []string{"MissingAuthenticationTokenException"}},
		{name: "none", method: http.MethodGet, path: "/", status: http.StatusBadRequest, want: []string{"UnknownServiceException"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, s.URL()+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			if c.target != "" {
				req.Header.Set("X-Amz-Target", c.target)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			for _, w := range c.want {
				if ct, ok := strings.CutPrefix(w, "ctype:"); ok {
					if got := resp.Header.Get("Content-Type"); got != ct {
						t.Errorf("content type %q, want %q", got, ct)
					}
				} else if !strings.Contains(string(body), w) {
					t.Errorf("body lacks %q: %s", w, body)
				}
			}
		})
	}
}

// TestSignedForAnotherRegionIsRefused checks that routing does not hide the
// service's own scope check.
func TestSignedForAnotherRegionIsRefused(t *testing.T) {
	_, cfg, _ := start(t, Config{})
	cfg.Region = "eu-west-1"
	_, err := awsec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &awsec2.DescribeSubnetsInput{})
	if err == nil || !strings.Contains(err.Error(), "AuthFailure") {
		t.Errorf("DescribeSubnets signed for eu-west-1: %v, want AuthFailure", err)
	}
}

// TestStopIsIdempotentAndFreesThePort stops twice and checks that nothing
// answers on the URL afterwards.
func TestStopIsIdempotentAndFreesThePort(t *testing.T) {
	s, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if resp, err := http.Get(s.URL()); err == nil {
		resp.Body.Close()
		t.Errorf("the endpoint still answers after Stop")
	}
}
