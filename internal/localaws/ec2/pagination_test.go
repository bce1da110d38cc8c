package ec2

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// pageSizes drains an SDK paginator, returning the size of each page and
// every id in page order.
func pageSizes[O any](t *testing.T, hasMore func() bool, next func(context.Context, ...func(*ec2.Options)) (O, error), ids func(O) []string) ([]int, []string) {
	t.Helper()
	var sizes []int
	var all []string
	for hasMore() {
		out, err := next(context.Background())
		must(t, err)
		page := ids(out)
		sizes = append(sizes, len(page))
		all = append(all, page...)
		if len(sizes) > 100 {
			t.Fatalf("paginator did not end after 100 pages")
		}
	}
	return sizes, all
}

// samePages checks the page sizes and that the ids are exactly want, each
// once.
func samePages(t *testing.T, what string, sizes, wantSizes []int, got, want []string) {
	t.Helper()
	if !slices.Equal(sizes, wantSizes) {
		t.Errorf("%s: pages of %v, want %v", what, sizes, wantSizes)
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: paged through %v, want each of %v once", what, got, want)
	}
}

// TestDescribeImagesPages pages 11 images, 3 at a time, through the SDK's
// paginator with a name filter.
func TestDescribeImagesPages(t *testing.T) {
	e := newEnv(t, 1)
	var want []string
	for i := range 11 {
		img, err := e.svc.AddImage(Image{Name: fmt.Sprintf("pager-%02d", i), CreationDate: epoch.Add(-time.Duration(i) * time.Hour)})
		must(t, err)
		want = append(want, img.ID)
	}
	p := ec2.NewDescribeImagesPaginator(e.client, &ec2.DescribeImagesInput{MaxResults: aws.Int32(3),
		Filters: []ec2types.Filter{flt("name", "pager-*")}})
	sizes, got := pageSizes(t, p.HasMorePages, p.NextPage, func(o *ec2.DescribeImagesOutput) []string {
		var ids []string
		for _, img := range o.Images {
			ids = append(ids, aws.ToString(img.ImageId))
		}
		return ids
	})
	samePages(t, "DescribeImages", sizes, []int{3, 3, 3, 2}, got, want)
}

// TestDescribeSecurityGroupsPages pages 12 groups, 5 at a time (the
// documented minimum), through the SDK's paginator, and refuses 4.
func TestDescribeSecurityGroupsPages(t *testing.T) {
	e := newEnv(t, 1)
	want := []string{e.groups[0].ID, e.groups[1].ID}
	for i := range 10 {
		g, err := e.svc.AddSecurityGroup(SecurityGroup{VPCID: e.vpc.ID, Name: fmt.Sprintf("pager-%02d", i), Description: "paged"})
		must(t, err)
		want = append(want, g.ID)
	}
	p := ec2.NewDescribeSecurityGroupsPaginator(e.client, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(5)})
	sizes, got := pageSizes(t, p.HasMorePages, p.NextPage, func(o *ec2.DescribeSecurityGroupsOutput) []string {
		var ids []string
		for _, g := range o.SecurityGroups {
			ids = append(ids, aws.ToString(g.GroupId))
		}
		return ids
	})
	samePages(t, "DescribeSecurityGroups", sizes, []int{5, 5, 2}, got, want)
	_, err := e.client.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(4)})
	if got := code(t, err); got != "InvalidParameterValue" {
		t.Errorf("MaxResults 4: code %q, want InvalidParameterValue", got)
	}
}

// TestDescribeLaunchTemplatesPages pages 7 templates, 2 at a time, through
// the SDK's paginator.
func TestDescribeLaunchTemplatesPages(t *testing.T) {
	e := newEnv(t, 1)
	var want []string
	for i := range 7 {
		lt := e.createTemplate(t, fmt.Sprintf("pager-%02d", i), e.images[0].ID)
		want = append(want, aws.ToString(lt.LaunchTemplateId))
	}
	p := ec2.NewDescribeLaunchTemplatesPaginator(e.client, &ec2.DescribeLaunchTemplatesInput{MaxResults: aws.Int32(2)})
	sizes, got := pageSizes(t, p.HasMorePages, p.NextPage, func(o *ec2.DescribeLaunchTemplatesOutput) []string {
		var ids []string
		for _, lt := range o.LaunchTemplates {
			ids = append(ids, aws.ToString(lt.LaunchTemplateId))
		}
		return ids
	})
	samePages(t, "DescribeLaunchTemplates", sizes, []int{2, 2, 2, 1}, got, want)
}
