package subnet

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	testclock "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

var ignoreSDK = cmpopts.IgnoreUnexported(ec2types.Filter{})

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func TestFilters(t *testing.T) {
	cases := map[string]struct {
		terms []v1.SubnetSelectorTerm
		want  [][]ec2types.Filter
	}{
		"one id": {
			terms: []v1.SubnetSelectorTerm{{ID: "subnet-1"}},
			want:  [][]ec2types.Filter{{filter("subnet-id", "subnet-1")}},
		},
		"ids collapse into one call": {
			terms: []v1.SubnetSelectorTerm{{ID: "subnet-1"}, {Tags: map[string]string{"a": "b"}}, {ID: "subnet-2"}},
			want:  [][]ec2types.Filter{{filter("subnet-id", "subnet-1", "subnet-2")}, {filter("tag:a", "b")}},
		},
		"tags are ANDed in one call, sorted by key; * is tag-key": {
			terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo", "Name": "*"}}},
			want:  [][]ec2types.Filter{{filter("tag-key", "Name"), filter("tag:karpenter.sh/discovery", "demo")}},
		},
		"tags terms are ORed as separate calls": {
			terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"a": "1"}}, {Tags: map[string]string{"b": "*"}}},
			want:  [][]ec2types.Filter{{filter("tag:a", "1")}, {filter("tag-key", "b")}},
		},
		"an id wins over tags in the same term": {
			terms: []v1.SubnetSelectorTerm{{ID: "subnet-1", Tags: map[string]string{"a": "1"}}},
			want:  [][]ec2types.Filter{{filter("subnet-id", "subnet-1")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Filters(tc.terms), ignoreSDK); diff != "" {
				t.Errorf("Filters() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// localEC2 starts the local EC2 endpoint and returns it, an SDK client
// talking to it and a counter of the requests it served.
func localEC2(t *testing.T, clk *testclock.FakeClock) (*localec2.Service, *ec2.Client, *atomic.Int64) {
	t.Helper()
	svc := localec2.New(localec2.Config{Clock: clk, Seed: 1})
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		svc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	client := ec2.New(ec2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
	})
	return svc, client, &requests
}

func TestProviderAgainstLocalEC2(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	svc, client, requests := localEC2(t, clk)
	vpc, err := svc.AddVPC(localec2.VPC{CIDR: "10.0.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, s := range []struct {
		zone, cidr string
		tags       map[string]string
	}{
		{"us-east-1a", "10.0.1.0/24", map[string]string{"discovery": "demo", "tier": "private"}},
		{"us-east-1a", "10.0.2.0/26", map[string]string{"discovery": "demo", "tier": "public"}},
		{"us-east-1b", "10.0.3.0/24", map[string]string{"discovery": "other"}},
		{"us-east-1c", "10.0.4.0/24", nil},
	} {
		sn, err := svc.AddSubnet(localec2.Subnet{VPCID: vpc.ID, Zone: s.zone, CIDR: s.cidr, Tags: s.tags})
		if err != nil {
			t.Fatalf("subnet %d: %v", i, err)
		}
		ids = append(ids, sn.ID)
	}
	p := NewProvider(client, clk)
	ctx := context.Background()
	list := func(terms ...v1.SubnetSelectorTerm) []string {
		t.Helper()
		subnets, err := p.List(ctx, terms)
		if err != nil {
			t.Fatalf("List(%v): %v", terms, err)
		}
		out := []string{}
		for _, s := range subnets {
			out = append(out, aws.ToString(s.SubnetId))
		}
		return out
	}
	sorted := func(in ...string) []string { slices.Sort(in); return in }
	cases := map[string]struct {
		terms []v1.SubnetSelectorTerm
		want  []string
	}{
		"tag value":              {terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"discovery": "demo"}}}, want: sorted(ids[0], ids[1])},
		"tags ANDed":             {terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"discovery": "demo", "tier": "public"}}}, want: []string{ids[1]}},
		"wildcard":               {terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"discovery": "*"}}}, want: sorted(ids[0], ids[1], ids[2])},
		"terms ORed and unioned": {terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"discovery": "demo"}}, {ID: ids[0]}, {ID: ids[3]}}, want: sorted(ids[0], ids[1], ids[3])},
		"nothing matches":        {terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"discovery": "nope"}}}, want: []string{}},
		"one subnet of a tag":    {terms: []v1.SubnetSelectorTerm{{Tags: map[string]string{"tier": "private"}}}, want: []string{ids[0]}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, list(tc.terms...)); diff != "" {
				t.Errorf("List() mismatch (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("cached for a minute", func(t *testing.T) {
		terms := v1.SubnetSelectorTerm{Tags: map[string]string{"tier": "*"}}
		list(terms)
		before := requests.Load()
		list(terms)
		if got := requests.Load() - before; got != 0 {
			t.Errorf("second List made %d requests, want 0", got)
		}
		clk.Step(CacheTTL)
		list(terms)
		if got := requests.Load() - before; got != 1 {
			t.Errorf("List after the TTL made %d requests, want 1", got)
		}
	})
}
