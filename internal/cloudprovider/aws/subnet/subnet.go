package subnet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
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
	clock clock.PassiveClock

	mu    sync.Mutex
	cache map[string]entry
}

type entry struct {
	subnets []ec2types.Subnet
	expires time.Time
}

// NewProvider returns a Provider that calls DescribeSubnets through client
// and ages its cache with clk.
func NewProvider(client sdk.EC2, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: client, clock: clk, cache: map[string]entry{}}
}

// List returns the subnets matched by terms, sorted by subnet ID. An empty
// result is not an error: the caller decides what "no subnet" means.
func (p *Provider) List(ctx context.Context, terms []v1.SubnetSelectorTerm) ([]ec2types.Subnet, error) {
	key, err := cacheKey(terms)
	if err != nil {
		return nil, err
	}
	now := p.clock.Now()
	p.mu.Lock()
	if e, ok := p.cache[key]; ok && now.Before(e.expires) {
		p.mu.Unlock()
		return slices.Clone(e.subnets), nil
	}
	p.mu.Unlock()

	byID := map[string]ec2types.Subnet{}
	for _, filters := range Filters(terms) {
		pages := ec2.NewDescribeSubnetsPaginator(p.ec2, &ec2.DescribeSubnetsInput{Filters: filters, MaxResults: aws.Int32(maxResults)})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets: %w", err)
			}
			for _, s := range out.Subnets {
				byID[aws.ToString(s.SubnetId)] = s
			}
		}
	}
	subnets := make([]ec2types.Subnet, 0, len(byID))
	for _, s := range byID {
		subnets = append(subnets, s)
	}
	sort.Slice(subnets, func(i, j int) bool { return aws.ToString(subnets[i].SubnetId) < aws.ToString(subnets[j].SubnetId) })

	p.mu.Lock()
	defer p.mu.Unlock()
	for k, e := range p.cache {
		if !now.Before(e.expires) {
			delete(p.cache, k)
		}
	}
	p.cache[key] = entry{subnets: subnets, expires: now.Add(CacheTTL)}
	return slices.Clone(subnets), nil
}

// ZonalSubnetsForLaunch lists the subnets of terms and keeps, per zone, the
// one to launch into (see PickPerZone).
func (p *Provider) ZonalSubnetsForLaunch(ctx context.Context, terms []v1.SubnetSelectorTerm) (map[string]ec2types.Subnet, error) {
	subnets, err := p.List(ctx, terms)
	if err != nil {
		return nil, err
	}
	return PickPerZone(subnets), nil
}

// PickPerZone keeps, for each availability zone, the subnet with the most
// available IP addresses; ties go to the lower subnet ID so the choice is
// stable. The map is keyed by zone name.
func PickPerZone(subnets []ec2types.Subnet) map[string]ec2types.Subnet {
	out := map[string]ec2types.Subnet{}
	for _, s := range subnets {
		zone := aws.ToString(s.AvailabilityZone)
		best, ok := out[zone]
		if !ok || better(s, best) {
			out[zone] = s
		}
	}
	return out
}

func better(a, b ec2types.Subnet) bool {
	ai, bi := aws.ToInt32(a.AvailableIpAddressCount), aws.ToInt32(b.AvailableIpAddressCount)
	if ai != bi {
		return ai > bi
	}
	return aws.ToString(a.SubnetId) < aws.ToString(b.SubnetId)
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
		out = append(out, TagFilters(term.Tags))
	}
	if len(ids) > 0 {
		out = append([][]ec2types.Filter{{{Name: aws.String("subnet-id"), Values: ids}}}, out...)
	}
	return out
}

// TagFilters turns a selector term's tags into EC2 filters, sorted by key:
// the value "*" matches any value of the key (tag-key), any other value
// matches exactly (tag:<key>).
func TagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	filters := make([]ec2types.Filter, 0, len(keys))
	for _, k := range keys {
		if v := tags[k]; v == "*" {
			filters = append(filters, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return filters
}

func cacheKey(terms any) (string, error) {
	b, err := json.Marshal(terms)
	if err != nil {
		return "", fmt.Errorf("encoding selector terms: %w", err)
	}
	return string(b), nil
}
