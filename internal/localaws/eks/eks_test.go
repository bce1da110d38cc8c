package eks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newClient(t *testing.T, s *Service, creds aws.CredentialsProvider, region string) *eks.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return eks.New(eks.Options{Region: region, BaseEndpoint: aws.String(srv.URL), Credentials: creds, Retryer: aws.NopRetryer{}})
}

func static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")
}

func TestDescribeCluster(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	s := New(Config{Clock: clk})
	s.PutCluster(Cluster{Name: "dovetail", Endpoint: "https://127.0.0.1:6443", CertificateAuthority: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")})
	s.PutCluster(Cluster{Name: "v6", IPFamily: "ipv6", ServiceIPv6CIDR: "fd00:1::/108", Version: "1.35", Tags: map[string]string{"a": "b"}})
	c := newClient(t, s, static(), "us-east-1")

	cases := map[string]struct {
		name string
		want types.Cluster
	}{
		"ipv4": {name: "dovetail", want: types.Cluster{
			Name: aws.String("dovetail"), Arn: aws.String("arn:aws:eks:us-east-1:123456789012:cluster/dovetail"),
			CreatedAt: aws.Time(start), Version: aws.String("1.36"), Endpoint: aws.String("https://127.0.0.1:6443"),
			Status: types.ClusterStatusActive, PlatformVersion: aws.String("eks.1"),
			CertificateAuthority:    &types.Certificate{Data: aws.String("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=")},
			KubernetesNetworkConfig: &types.KubernetesNetworkConfigResponse{IpFamily: types.IpFamilyIpv4, ServiceIpv4Cidr: aws.String("10.100.0.0/16")},
			Tags:                    map[string]string{},
		}},
		"ipv6": {name: "v6", want: types.Cluster{
			Name: aws.String("v6"), Arn: aws.String("arn:aws:eks:us-east-1:123456789012:cluster/v6"),
			CreatedAt: aws.Time(start), Version: aws.String("1.35"),
			Status: types.ClusterStatusActive, PlatformVersion: aws.String("eks.1"),
			CertificateAuthority:    &types.Certificate{},
			KubernetesNetworkConfig: &types.KubernetesNetworkConfigResponse{IpFamily: types.IpFamilyIpv6, ServiceIpv6Cidr: aws.String("fd00:1::/108")},
			Tags:                    map[string]string{"a": "b"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := c.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String(tc.name)})
			if err != nil {
				t.Fatalf("DescribeCluster: %v", err)
			}
			if diff := cmp.Diff(tc.want, *out.Cluster, cmpopts.IgnoreUnexported(types.Cluster{}, types.Certificate{}, types.KubernetesNetworkConfigResponse{})); diff != "" {
				t.Errorf("Cluster (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdateCluster(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	s := New(Config{Clock: clk, Region: "eu-west-1", AccountID: "210987654321"})
	s.PutCluster(Cluster{Name: "c"})
	clk.Step(time.Minute)
	if !s.UpdateCluster("c", func(c *Cluster) { c.Endpoint = "https://new"; c.Version = "1.37"; c.ServiceIPv4CIDR = "172.20.0.0/16" }) {
		t.Fatal("UpdateCluster: cluster not found")
	}
	if s.UpdateCluster("missing", func(*Cluster) {}) {
		t.Fatal("UpdateCluster(missing) = true")
	}
	c := newClient(t, s, static(), "eu-west-1")
	out, err := c.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("c")})
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	got := []string{*out.Cluster.Endpoint, *out.Cluster.Version, *out.Cluster.KubernetesNetworkConfig.ServiceIpv4Cidr, *out.Cluster.Arn, out.Cluster.CreatedAt.UTC().String()}
	want := []string{"https://new", "1.37", "172.20.0.0/16", "arn:aws:eks:eu-west-1:210987654321:cluster/c", start.String()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !s.DeleteCluster("c") || len(s.Clusters()) != 0 {
		t.Fatalf("DeleteCluster left %v", s.Clusters())
	}
}

func TestErrors(t *testing.T) {
	s := New(Config{})
	s.PutCluster(Cluster{Name: "c"})
	cases := map[string]struct {
		client *eks.Client
		name   string
		want   string
	}{
		"not found":    {client: newClient(t, s, static(), "us-east-1"), name: "other", want: "ResourceNotFoundException"},
		"odd name":     {client: newClient(t, s, static(), "us-east-1"), name: "a/b", want: "ResourceNotFoundException"},
		"unsigned":     {client: newClient(t, s, aws.AnonymousCredentials{}, "us-east-1"), name: "c", want: "MissingAuthenticationTokenException"},
		"wrong region": {client: newClient(t, s, static(), "us-west-2"), name: "c", want: "InvalidSignatureException"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.client.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String(tc.name)})
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.want {
				t.Fatalf("error = %v, want %s", err, tc.want)
			}
		})
	}
	_, err := newClient(t, s, static(), "us-east-1").DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("zzz")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) || aws.ToString(nf.ClusterName) != "zzz" {
		t.Fatalf("error = %v, want *types.ResourceNotFoundException for zzz", err)
	}
}

func TestUnknownRoute(t *testing.T) {
	srv := httptest.NewServer(New(Config{}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/clusters", nil)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/eks/aws4_request, SignedHeaders=host, Signature=x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Amzn-ErrorType") != "UnknownOperationException" {
		t.Fatalf("status %d, error type %q", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
}
