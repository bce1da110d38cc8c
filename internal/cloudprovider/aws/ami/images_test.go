package ami

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func image(id, name, arch string, created time.Time, deprecation *time.Time) ec2types.Image {
	img := ec2types.Image{ImageId: aws.String(id), Name: aws.String(name), Architecture: ec2types.ArchitectureValues(arch),
		CreationDate: aws.String(created.Format(time.RFC3339))}
	if deprecation != nil {
		img.DeprecationTime = aws.String(deprecation.Format(time.RFC3339))
	}
	return img
}

func archReq(arch string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}
}

func TestSelect(t *testing.T) {
	day := 24 * time.Hour
	past := now.Add(-time.Hour)
	gpu := corev1.NodeSelectorRequirement{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}
	cases := map[string]struct {
		candidates []Candidate
		want       []v1.AMI
	}{
		"newest per arch, sorted newest first": {
			candidates: []Candidate{
				{Image: image("ami-old", "a", "x86_64", now.Add(-3*day), nil)},
				{Image: image("ami-new", "b", "x86_64", now.Add(-1*day), nil)},
				{Image: image("ami-arm", "c", "arm64", now.Add(-2*day), nil)},
			},
			want: []v1.AMI{
				{ID: "ami-new", Name: "b", Requirements: []corev1.NodeSelectorRequirement{archReq("amd64")}},
				{ID: "ami-arm", Name: "c", Requirements: []corev1.NodeSelectorRequirement{archReq("arm64")}},
			},
		},
		"non-deprecated beats newer deprecated": {
			candidates: []Candidate{
				{Image: image("ami-dep", "z", "x86_64", now.Add(-1*day), &past)},
				{Image: image("ami-ok", "a", "x86_64", now.Add(-5*day), nil)},
			},
			want: []v1.AMI{{ID: "ami-ok", Name: "a", Requirements: []corev1.NodeSelectorRequirement{archReq("amd64")}}},
		},
		"only deprecated: kept and flagged": {
			candidates: []Candidate{{Image: image("ami-dep", "z", "arm64", now.Add(-1*day), &past)}},
			want:       []v1.AMI{{ID: "ami-dep", Name: "z", Deprecated: true, Requirements: []corev1.NodeSelectorRequirement{archReq("arm64")}}},
		},
		"same date: larger name wins": {
			candidates: []Candidate{
				{Image: image("ami-1", "node-v1", "x86_64", now, nil)},
				{Image: image("ami-2", "node-v2", "x86_64", now, nil)},
			},
			want: []v1.AMI{{ID: "ami-2", Name: "node-v2", Requirements: []corev1.NodeSelectorRequirement{archReq("amd64")}}},
		},
		"one image, two requirement sets; ties sorted by ID": {
			candidates: []Candidate{
				{Image: image("ami-b", "gpu", "x86_64", now, nil), Requirements: []corev1.NodeSelectorRequirement{gpu}},
				{Image: image("ami-a", "std", "x86_64", now, nil)},
			},
			want: []v1.AMI{
				{ID: "ami-a", Name: "std", Requirements: []corev1.NodeSelectorRequirement{archReq("amd64")}},
				// Requirements sorted by key length, then key.
				{ID: "ami-b", Name: "gpu", Requirements: []corev1.NodeSelectorRequirement{archReq("amd64"), gpu}},
			},
		},
		"other architectures dropped": {
			candidates: []Candidate{{Image: image("ami-mac", "mac", "x86_64_mac", now, nil)}, {Image: image("ami-i386", "old", "i386", now, nil)}},
			want:       []v1.AMI{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Select(tc.candidates, now), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Select() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSortRequirements(t *testing.T) {
	reqs := []corev1.NodeSelectorRequirement{
		{Key: v1.LabelInstanceGPUCount}, {Key: corev1.LabelWindowsBuild}, {Key: corev1.LabelOSStable}, {Key: corev1.LabelArchStable}, {Key: v1.LabelInstanceAcceleratorCount},
	}
	SortRequirements(reqs)
	var got []string
	for _, r := range reqs {
		got = append(got, r.Key)
	}
	want := []string{"kubernetes.io/os", "kubernetes.io/arch", "node.kubernetes.io/windows-build", "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-accelerator-count"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SortRequirements() mismatch (-want +got):\n%s", diff)
	}
}

func TestQueries(t *testing.T) {
	f := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	available := f("state", "available")
	cases := map[string]struct {
		terms    []v1.AMISelectorTerm
		resolved map[string]string
		want     []Query
	}{
		"ids and ssm parameters share one image-id query": {
			terms:    []v1.AMISelectorTerm{{ID: "ami-1"}, {SSMParameter: "/team/ami"}, {ID: "ami-2"}},
			resolved: map[string]string{"/team/ami": "ami-9"},
			want:     []Query{{Filters: []ec2types.Filter{f("image-id", "ami-1", "ami-9", "ami-2"), available}}},
		},
		"name defaults owners to self and amazon": {
			terms: []v1.AMISelectorTerm{{Name: "amazon-eks-node-*"}},
			want:  []Query{{Filters: []ec2types.Filter{f("name", "amazon-eks-node-*"), available}, Owners: []string{"self", "amazon"}}},
		},
		"name with owner": {
			terms: []v1.AMISelectorTerm{{Name: "custom-*", Owner: "123456789012"}},
			want:  []Query{{Filters: []ec2types.Filter{f("name", "custom-*"), available}, Owners: []string{"123456789012"}}},
		},
		"tags only: any owner; tags ANDed, * is tag-key": {
			terms: []v1.AMISelectorTerm{{Tags: map[string]string{"team": "infra", "golden": "*"}}},
			want:  []Query{{Filters: []ec2types.Filter{f("tag-key", "golden"), f("tag:team", "infra"), available}}},
		},
		"terms ORed, id query first": {
			terms: []v1.AMISelectorTerm{{Tags: map[string]string{"a": "b"}}, {ID: "ami-1"}, {Name: "n", Tags: map[string]string{"c": "d"}, Owner: "self"}},
			want: []Query{
				{Filters: []ec2types.Filter{f("image-id", "ami-1"), available}},
				{Filters: []ec2types.Filter{f("tag:a", "b"), available}},
				{Filters: []ec2types.Filter{f("name", "n"), f("tag:c", "d"), available}, Owners: []string{"self"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Queries(tc.terms, tc.resolved), cmpopts.IgnoreUnexported(ec2types.Filter{})); diff != "" {
				t.Errorf("Queries() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
