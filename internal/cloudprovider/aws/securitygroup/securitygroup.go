package securitygroup

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/selector"
)

// CacheTTL is how long the security groups of one set of selector terms are
// reused before EC2 is asked again.
const CacheTTL = time.Minute

// maxResults is the page size of DescribeSecurityGroups.
const maxResults = 500

// Provider lists the security groups that selector terms match, caching each
// answer for CacheTTL keyed by the terms. It is safe for concurrent use.
type Provider struct {
	ec2   sdk.EC2
	cache *selector.Cache[ec2types.SecurityGroup]
}

// NewProvider returns a Provider that calls DescribeSecurityGroups through
// client and ages its cache with clk.
func NewProvider(client sdk.EC2, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: client, cache: selector.NewCache[ec2types.SecurityGroup](clk, CacheTTL)}
}

// List returns the security groups matched by terms, sorted by group ID. An
// empty result is not an error.
func (p *Provider) List(ctx context.Context, terms []v1.SecurityGroupSelectorTerm) ([]ec2types.SecurityGroup, error) {
	return p.cache.Get(terms, func() ([]ec2types.SecurityGroup, error) {
		return selector.Union(ctx, Filters(terms), p.describe, func(g ec2types.SecurityGroup) string { return aws.ToString(g.GroupId) })
	})
}

// describe pages through DescribeSecurityGroups with one filter set.
func (p *Provider) describe(ctx context.Context, filters []ec2types.Filter) ([]ec2types.SecurityGroup, error) {
	var out []ec2types.SecurityGroup
	pages := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, &ec2.DescribeSecurityGroupsInput{Filters: filters, MaxResults: aws.Int32(maxResults)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing security groups: %w", err)
		}
		out = append(out, page.SecurityGroups...)
	}
	return out, nil
}

// Filters turns selector terms into the filter sets of the
// DescribeSecurityGroups calls to make, one set per call: first one call
// with a group-id filter holding every id term, then one with a group-name
// filter holding every name term, then one call per tags term (see
// selector.TagFilters). id wins over name, and name over tags, in a term that
// sets several (the CRD forbids it).
func Filters(terms []v1.SecurityGroupSelectorTerm) [][]ec2types.Filter {
	var ids, names []string
	var tagSets [][]ec2types.Filter
	for _, term := range terms {
		switch {
		case term.ID != "":
			ids = append(ids, term.ID)
		case term.Name != "":
			names = append(names, term.Name)
		default:
			tagSets = append(tagSets, selector.TagFilters(term.Tags))
		}
	}
	var out [][]ec2types.Filter
	if len(ids) > 0 {
		out = append(out, []ec2types.Filter{{Name: aws.String("group-id"), Values: ids}})
	}
	if len(names) > 0 {
		out = append(out, []ec2types.Filter{{Name: aws.String("group-name"), Values: names}})
	}
	return append(out, tagSets...)
}
