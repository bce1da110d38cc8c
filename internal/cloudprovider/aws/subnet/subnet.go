package subnet

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

// CacheTTL is how long the subnets of one set of selector terms are reused
// before EC2 is asked again (Karpenter's --subnet-refresh-interval default).
const CacheTTL = time.Minute

// maxResults is the page size of DescribeSubnets.
const maxResults = 500

// Provider lists the subnets that selector terms match, caching each answer
// for CacheTTL keyed by the terms. It is safe for concurrent use.
type Provider struct {
	ec2   sdk.EC2
	cache *selector.Cache[ec2types.Subnet]
}

// NewProvider returns a Provider that calls DescribeSubnets through client
// and ages its cache with clk.
func NewProvider(client sdk.EC2, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: client, cache: selector.NewCache[ec2types.Subnet](clk, CacheTTL)}
}

// List returns the subnets matched by terms, sorted by subnet ID. An empty
// result is not an error: the caller decides what "no subnet" means.
func (p *Provider) List(ctx context.Context, terms []v1.SubnetSelectorTerm) ([]ec2types.Subnet, error) {
	return p.cache.Get(terms, func() ([]ec2types.Subnet, error) {
		return selector.Union(ctx, Filters(terms), p.describe, func(s ec2types.Subnet) string { return aws.ToString(s.SubnetId) })
	})
}

// describe pages through DescribeSubnets with one filter set.
func (p *Provider) describe(ctx context.Context, filters []ec2types.Filter) ([]ec2types.Subnet, error) {
	var out []ec2types.Subnet
	pages := ec2.NewDescribeSubnetsPaginator(p.ec2, &ec2.DescribeSubnetsInput{Filters: filters, MaxResults: aws.Int32(maxResults)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing subnets: %w", err)
		}
		out = append(out, page.Subnets...)
	}
	return out, nil
}

// Filters turns selector terms into the filter sets of the DescribeSubnets
// calls to make, one set per call. All id terms share one call with a single
// subnet-id filter (listed first); every other term is its own call with one
// filter per tag, sorted by key: the value "*" becomes tag-key=<key>, any
// other value tag:<key>=<value>. A term with an id is an id term; its tags,
// which the CRD forbids beside an id, are ignored.
func Filters(terms []v1.SubnetSelectorTerm) [][]ec2types.Filter {
	var ids []string
	var out [][]ec2types.Filter
	for _, term := range terms {
		if term.ID != "" {
			ids = append(ids, term.ID)
			continue
		}
		out = append(out, selector.TagFilters(term.Tags))
	}
	if len(ids) > 0 {
		out = append([][]ec2types.Filter{{{Name: aws.String("subnet-id"), Values: ids}}}, out...)
	}
	return out
}
