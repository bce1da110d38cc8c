package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
)

func TestAMITerms(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		selector    map[string]string
		want        []awsv1beta1.AMISelectorTerm
		wantWarning bool
	}{
		"nothing": {},
		"ids alone, deduplicated, in order": {
			selector: map[string]string{"aws::ids": "ami-2, ami-1,ami-2"},
			want:     []awsv1beta1.AMISelectorTerm{{ID: "ami-2"}, {ID: "ami-1"}},
		},
		"ids beside other filters keep only the ids": {
			selector:    map[string]string{"aws-ids": "ami-1", "aws::name": "n", "team": "a"},
			want:        []awsv1beta1.AMISelectorTerm{{ID: "ami-1"}},
			wantWarning: true,
		},
		"owners outermost, then names, then tag combinations (first key fastest)": {
			selector: map[string]string{"aws::owners": "self,amazon", "aws::name": "n1", "k1": "a,b", "k2": "c"},
			want: []awsv1beta1.AMISelectorTerm{
				{Owner: "self", Name: "n1", Tags: map[string]string{"k1": "a", "k2": "c"}},
				{Owner: "self", Name: "n1", Tags: map[string]string{"k1": "b", "k2": "c"}},
				{Owner: "amazon", Name: "n1", Tags: map[string]string{"k1": "a", "k2": "c"}},
				{Owner: "amazon", Name: "n1", Tags: map[string]string{"k1": "b", "k2": "c"}},
			},
		},
		"a wildcard tag value": {
			selector: map[string]string{"MyTag": "*"},
			want:     []awsv1beta1.AMISelectorTerm{{Tags: map[string]string{"MyTag": "*"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := legacyResult{}
			got := amiTerms(tc.selector, field.NewPath("spec", "amiSelector"), &r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("amiTerms() (-want +got):\n%s", diff)
			}
			if (len(r.warnings) > 0) != tc.wantWarning {
				t.Errorf("amiTerms() warnings %q, want a warning: %v", r.warnings, tc.wantWarning)
			}
		})
	}
}

func TestSubnetAndSecurityGroupTerms(t *testing.T) {
	t.Parallel()
	r := legacyResult{}
	subnets := subnetTerms(map[string]string{"aws::ids": "subnet-1,subnet-2", "Name": "x"}, field.NewPath("spec", "subnetSelector"), &r)
	if diff := cmp.Diff([]awsv1.SubnetSelectorTerm{{ID: "subnet-1"}, {ID: "subnet-2"}}, subnets); diff != "" {
		t.Errorf("subnetTerms() (-want +got):\n%s", diff)
	}
	if len(r.warnings) != 1 {
		t.Errorf("subnetTerms() warnings %q, want one about the dropped tag", r.warnings)
	}
	groups := securityGroupTerms(map[string]string{"b": "1,2", "a": "x"}, field.NewPath("spec", "securityGroupSelector"), &r)
	want := []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"a": "x", "b": "1"}}, {Tags: map[string]string{"a": "x", "b": "2"}}}
	if diff := cmp.Diff(want, groups); diff != "" {
		t.Errorf("securityGroupTerms() (-want +got):\n%s", diff)
	}
}
