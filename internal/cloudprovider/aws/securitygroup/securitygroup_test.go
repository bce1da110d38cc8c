package securitygroup

import (
	"context"
	"net/http/httptest"
	"slices"
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

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func TestFilters(t *testing.T) {
	cases := map[string]struct {
		terms []v1.SecurityGroupSelectorTerm
		want  [][]ec2types.Filter
	}{
		"ids collapse": {
			terms: []v1.SecurityGroupSelectorTerm{{ID: "sg-1"}, {ID: "sg-2"}},
			want:  [][]ec2types.Filter{{filter("group-id", "sg-1", "sg-2")}},
		},
		"names collapse into group-name": {
			terms: []v1.SecurityGroupSelectorTerm{{Name: "nodes"}, {Name: "extra"}},
			want:  [][]ec2types.Filter{{filter("group-name", "nodes", "extra")}},
		},
		"ids, then names, then one call per tags term": {
			terms: []v1.SecurityGroupSelectorTerm{{Tags: map[string]string{"b": "*", "a": "x"}}, {Name: "nodes"}, {ID: "sg-1"}, {Tags: map[string]string{"c": "y"}}},
			want: [][]ec2types.Filter{
				{filter("group-id", "sg-1")},
				{filter("group-name", "nodes")},
				{filter("tag:a", "x"), filter("tag-key", "b")},
				{filter("tag:c", "y")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Filters(tc.terms), cmpopts.IgnoreUnexported(ec2types.Filter{})); diff != "" {
				t.Errorf("Filters() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProviderAgainstLocalEC2(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	svc := localec2.New(localec2.Config{Clock: clk, Seed: 1})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client := ec2.New(ec2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
	})
	vpc, err := svc.AddVPC(localec2.VPC{CIDR: "10.0.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, g := range []localec2.SecurityGroup{
		{Name: "nodes", Tags: map[string]string{"discovery": "demo", "Name": "not-the-group-name"}},
		{Name: "control", Tags: map[string]string{"discovery": "demo-control"}},
		{Name: "other"},
	} {
		g.VPCID, g.Description = vpc.ID, g.Name
		out, err := svc.AddSecurityGroup(g)
		if err != nil {
			t.Fatal(err)
		}
		ids[g.Name] = out.ID
	}
	p := NewProvider(client, clk)
	sorted := func(in ...string) []string { slices.Sort(in); return in }
	cases := map[string]struct {
		terms []v1.SecurityGroupSelectorTerm
		want  []string
	}{
		"by name (GroupName, not the Name tag)": {terms: []v1.SecurityGroupSelectorTerm{{Name: "nodes"}}, want: []string{ids["nodes"]}},
		"Name tag is a tag":                     {terms: []v1.SecurityGroupSelectorTerm{{Tags: map[string]string{"Name": "not-the-group-name"}}}, want: []string{ids["nodes"]}},
		"by id":                                 {terms: []v1.SecurityGroupSelectorTerm{{ID: ids["other"]}}, want: []string{ids["other"]}},
		"wildcard tag":                          {terms: []v1.SecurityGroupSelectorTerm{{Tags: map[string]string{"discovery": "*"}}}, want: sorted(ids["nodes"], ids["control"])},
		"terms unioned":                         {terms: []v1.SecurityGroupSelectorTerm{{Name: "other"}, {Tags: map[string]string{"discovery": "demo"}}, {ID: ids["nodes"]}}, want: sorted(ids["nodes"], ids["other"])},
		"nothing":                               {terms: []v1.SecurityGroupSelectorTerm{{Name: "missing"}}, want: []string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			groups, err := p.List(context.Background(), tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, g := range groups {
				got = append(got, aws.ToString(g.GroupId))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("List() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
