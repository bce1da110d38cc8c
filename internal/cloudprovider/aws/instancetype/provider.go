package instancetype

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/launchtemplate"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/unavailable"
)

// CacheTTL is how long the EC2 data and the instance types computed for a
// node class are reused.
const CacheTTL = 5 * time.Minute

// Prices prices offerings; *pricing.Provider implements it.
type Prices interface {
	// OnDemandPrice is the hourly on-demand price of a type.
	OnDemandPrice(instanceType string) (float64, bool)
	// SpotPrice is the hourly spot price of a type in a zone.
	SpotPrice(instanceType, zone string) (float64, bool)
	// SeqNum changes whenever prices do.
	SeqNum() uint64
}

// Provider lists the instance types of an EC2NodeClass. It is safe for
// concurrent use. Build it with New.
type Provider struct {
	ec2         sdk.EC2
	prices      Prices
	unavailable *unavailable.Cache
	clock       clock.Clock
	settings    Settings
	known       map[string]schema.InstanceType
	// reservations, when set, has the live counts of capacity reservations.
	reservations Reservations

	// fetchMu serialises fetches of the EC2 data.
	fetchMu sync.Mutex
	mu      sync.Mutex
	data    *ec2Data
	dataSeq uint64
	cache   map[cacheKey]cacheEntry
}

// ec2Data is what DescribeInstanceTypes and DescribeInstanceTypeOfferings
// said, converted.
type ec2Data struct {
	fetched time.Time
	seq     uint64
	// facts are sorted by name.
	facts []schema.InstanceType
	// spot tells the types whose SupportedUsageClasses include spot, and
	// onDemand those with on-demand.
	spot, onDemand map[string]bool
	// zones maps a type to the zones that offer it.
	zones map[string]map[string]bool
	// skipped counts the types FromEC2 could not convert.
	skipped int
}

// cacheKey identifies the inputs of a List result.
type cacheKey struct {
	uid            string
	generation     int64
	subnets        string
	dataSeq        uint64
	unavailableSeq uint64
	pricesSeq      uint64
	reservations   string
	reservationSeq uint64
	amis           string
}

type cacheEntry struct {
	types   []*cloudprovider.InstanceType
	expires time.Time
}

// New returns a provider that reads EC2 through ec2API, prices offerings with
// prices, marks the offerings in unavailableCache unavailable and measures
// cache lifetimes with clk.
func New(ec2API sdk.EC2, prices Prices, unavailableCache *unavailable.Cache, clk clock.Clock, settings Settings) (*Provider, error) {
	switch {
	case ec2API == nil:
		return nil, errors.New("instance type provider: EC2 client must not be nil")
	case prices == nil:
		return nil, errors.New("instance type provider: prices must not be nil")
	case unavailableCache == nil:
		return nil, errors.New("instance type provider: unavailable-offerings cache must not be nil")
	case settings.Region == "":
		return nil, errors.New("instance type provider: region must not be empty")
	}
	facts, err := catalog.Facts()
	if err != nil {
		return nil, fmt.Errorf("instance type provider: reading catalog facts: %w", err)
	}
	known := make(map[string]schema.InstanceType, len(facts))
	for _, f := range facts {
		known[f.Name] = f
	}
	return &Provider{
		ec2: ec2API, prices: prices, unavailable: unavailableCache, clock: clk,
		settings: settings, known: known, cache: map[cacheKey]cacheEntry{},
	}, nil
}

// List returns the instance types nodes of nc can have, sorted by name, each
// with an offering per zone of nc's subnets that offers it and capacity type
// it supports and that has a price; offerings in the unavailable-offerings
// cache are marked unavailable. Types with no offering are left out. The
// result is cached for CacheTTL and shared: callers must not modify it.
func (p *Provider) List(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	data, err := p.ec2Data(ctx)
	if err != nil {
		return nil, err
	}
	key := cacheKey{
		uid:            string(nc.UID),
		generation:     nc.Generation,
		subnets:        subnetsKey(nc.Status.Subnets),
		dataSeq:        data.seq,
		unavailableSeq: p.unavailable.SeqNum(),
		pricesSeq:      p.prices.SeqNum(),
		reservations:   reservationsKey(nc.Status.CapacityReservations),
		amis:           amisKey(nc.Status.AMIs),
	}
	// Only a class with reservations has reserved offerings: a count change
	// of some reservation leaves the others' cached lists alone.
	if p.reservations != nil && len(nc.Status.CapacityReservations) > 0 {
		key.reservationSeq = p.reservations.SeqNum()
	}
	now := p.clock.Now()
	p.mu.Lock()
	if e, ok := p.cache[key]; ok && now.Before(e.expires) {
		p.mu.Unlock()
		return e.types, nil
	}
	p.mu.Unlock()

	types, err := p.compute(nc, data)
	if err != nil {
		return nil, err
	}
	// Only types one of the class's resolved AMIs suits can launch; a
	// class with none resolved yet is not Ready and launches nothing.
	if len(nc.Status.AMIs) > 0 {
		types = launchtemplate.SuitedToAMIs(nc.Status.AMIs, types)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, e := range p.cache {
		if !now.Before(e.expires) || (k.uid == key.uid && k != key) {
			delete(p.cache, k)
		}
	}
	p.cache[key] = cacheEntry{types: types, expires: now.Add(CacheTTL)}
	return types, nil
}

// UseReservations makes reserved offerings take their counts from r, which
// knows of launches and terminations since the class's status was written.
// Call it before the provider is used.
func (p *Provider) UseReservations(r Reservations) { p.reservations = r }

// reservationsKey renders the reservations of a class's status, which the
// reserved offerings depend on.
func reservationsKey(crs []awsv1.CapacityReservation) string {
	parts := make([]string, len(crs))
	for i, cr := range crs {
		n := int32(-1)
		if cr.AvailableInstanceCount != nil {
			n = *cr.AvailableInstanceCount
		}
		parts[i] = fmt.Sprintf("%s/%s/%s/%s/%d", cr.ID, cr.InstanceType, cr.AvailabilityZone, cr.State, n)
	}
	return strings.Join(parts, ",")
}

// amisKey identifies a class's resolved AMIs and their requirements.
func amisKey(amis []awsv1.AMI) string {
	var b strings.Builder
	for _, ami := range amis {
		fmt.Fprintf(&b, "%s%v;", ami.ID, ami.Requirements)
	}
	return b.String()
}

// subnetsKey renders the zones of the subnets, which the offerings depend on
// and which the generation does not track (they are status).
func subnetsKey(subnets []awsv1.Subnet) string {
	parts := make([]string, len(subnets))
	for i, s := range subnets {
		parts[i] = s.Zone + "=" + s.ZoneID
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// ec2Data returns the EC2 data, fetching it when it is older than CacheTTL.
// A failed fetch keeps older data if there is some, and logs the error.
func (p *Provider) ec2Data(ctx context.Context) (*ec2Data, error) {
	p.mu.Lock()
	data := p.data
	p.mu.Unlock()
	if data != nil && p.clock.Since(data.fetched) < CacheTTL {
		return data, nil
	}
	p.fetchMu.Lock()
	defer p.fetchMu.Unlock()
	p.mu.Lock()
	data = p.data
	p.mu.Unlock()
	if data != nil && p.clock.Since(data.fetched) < CacheTTL {
		return data, nil
	}
	fresh, err := p.fetch(ctx)
	if err != nil {
		if data != nil {
			log.FromContext(ctx).Error(err, "Refreshing instance types failed, using the previous ones", "age", p.clock.Since(data.fetched).String())
			return data, nil
		}
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dataSeq++
	fresh.seq = p.dataSeq
	p.data = fresh
	if fresh.skipped > 0 {
		log.FromContext(ctx).V(1).Info("Skipped instance types that could not be converted", "count", fresh.skipped)
	}
	return fresh, nil
}

// Refresh fetches the EC2 data now, whatever its age.
func (p *Provider) Refresh(ctx context.Context) error {
	p.fetchMu.Lock()
	defer p.fetchMu.Unlock()
	fresh, err := p.fetch(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dataSeq++
	fresh.seq = p.dataSeq
	p.data = fresh
	return nil
}

// fetch pages DescribeInstanceTypes and DescribeInstanceTypeOfferings.
func (p *Provider) fetch(ctx context.Context) (*ec2Data, error) {
	data := &ec2Data{
		fetched:  p.clock.Now(),
		spot:     map[string]bool{},
		onDemand: map[string]bool{},
		zones:    map[string]map[string]bool{},
	}
	types := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
		MaxResults: aws.Int32(100),
	})
	for types.HasMorePages() {
		out, err := types.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instance types: DescribeInstanceTypes: %w", err)
		}
		for _, info := range out.InstanceTypes {
			f, err := FromEC2(info, p.known)
			if err != nil {
				data.skipped++
				continue
			}
			data.facts = append(data.facts, f)
			data.spot[f.Name] = slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot)
			data.onDemand[f.Name] = slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeOnDemand)
		}
	}
	slices.SortFunc(data.facts, func(a, b schema.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	data.facts = slices.CompactFunc(data.facts, func(a, b schema.InstanceType) bool { return a.Name == b.Name })
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for offerings.HasMorePages() {
		out, err := offerings.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instance type offerings: DescribeInstanceTypeOfferings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			name, zone := string(o.InstanceType), aws.ToString(o.Location)
			if data.zones[name] == nil {
				data.zones[name] = map[string]bool{}
			}
			data.zones[name][zone] = true
		}
	}
	return data, nil
}
