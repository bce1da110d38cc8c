package pricing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// RefreshInterval is how often the composition should call Refresh.
const RefreshInterval = 12 * time.Hour

// Spot price history product descriptions of Linux instances, in and out of
// a VPC.
const (
	productLinux    = "Linux/UNIX"
	productLinuxVPC = "Linux/UNIX (Amazon VPC)"
)

// Options configure a Provider.
type Options struct {
	// Region is the region whose prices are wanted (the Price List API's
	// regionCode and the region of the EC2 client).
	Region string
	// IsolatedVPC means the Price List API is unreachable: on-demand prices
	// always come from the catalog (Karpenter's ISOLATED_VPC).
	IsolatedVPC bool
}

// Status describes the last refreshes.
type Status struct {
	// OnDemandUpdated and SpotUpdated are when prices were last fetched
	// successfully; zero while the catalog's prices are in use.
	OnDemandUpdated, SpotUpdated time.Time
	// OnDemandPrices and SpotPrices count the fetched prices in use.
	OnDemandPrices, SpotPrices int
	// SkippedEntries counts the price-list entries the last on-demand
	// refresh could not use (malformed, or without a price).
	SkippedEntries int
}

// Provider answers price questions from memory; Refresh updates it. It is
// safe for concurrent use. Build it with New.
type Provider struct {
	pricing  sdk.Pricing
	ec2      sdk.EC2
	clock    clock.Clock
	region   string
	isolated bool
	// fallback is the catalog's on-demand price of each type.
	fallback map[string]float64

	mu sync.RWMutex
	// onDemand and spot (type -> zone -> price) hold fetched prices.
	onDemand map[string]float64
	spot     map[string]map[string]float64
	status   Status
	seqNum   uint64
}

// New returns a provider that reads on-demand prices through pricingAPI
// (which may be nil when it is never called: isolated VPC or us-gov) and spot
// prices through ec2API, measuring time with clk. Until Refresh succeeds it
// answers with the catalog's prices.
func New(pricingAPI sdk.Pricing, ec2API sdk.EC2, clk clock.Clock, opts Options) (*Provider, error) {
	if opts.Region == "" {
		return nil, errors.New("pricing provider: region must not be empty")
	}
	if ec2API == nil {
		return nil, errors.New("pricing provider: EC2 client must not be nil")
	}
	if pricingAPI == nil && CallsPricingAPI(opts.Region, opts.IsolatedVPC) {
		return nil, fmt.Errorf("pricing provider: region %s needs a Pricing client unless the VPC is isolated", opts.Region)
	}
	facts, err := catalog.Facts()
	if err != nil {
		return nil, fmt.Errorf("pricing provider: reading catalog prices: %w", err)
	}
	fallback := make(map[string]float64, len(facts))
	for _, f := range facts {
		if f.OnDemandPrice != nil {
			fallback[f.Name] = *f.OnDemandPrice
		}
	}
	return &Provider{
		pricing:  pricingAPI,
		ec2:      ec2API,
		clock:    clk,
		region:   opts.Region,
		isolated: opts.IsolatedVPC,
		fallback: fallback,
		onDemand: map[string]float64{},
		spot:     map[string]map[string]float64{},
	}, nil
}

// CallsPricingAPI reports whether on-demand prices are fetched from the Price
// List API in region: not in an isolated VPC, not in the us-gov partition.
func CallsPricingAPI(region string, isolatedVPC bool) bool {
	return !isolatedVPC && !strings.HasPrefix(region, "us-gov-")
}

// EndpointRegion is the region of the Price List API endpoint that serves
// region's prices: ap-south-1 for ap-*, eu-central-1 for eu-*, cn-northwest-1
// for cn-*, else us-east-1.
func EndpointRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"):
		return "eu-central-1"
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	}
	return "us-east-1"
}

// currency is the price-list currency of region.
func currency(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "CNY"
	}
	return "USD"
}

// OnDemandPrice returns the hourly on-demand price of an instance type: the
// fetched one, else the catalog's; false when neither knows it.
func (p *Provider) OnDemandPrice(instanceType string) (float64, bool) {
	p.mu.RLock()
	price, ok := p.onDemand[instanceType]
	p.mu.RUnlock()
	if ok {
		return price, true
	}
	price, ok = p.fallback[instanceType]
	return price, ok
}

// SpotPrice returns the hourly spot price of an instance type in a zone: the
// newest fetched one, else the catalog's derived spot price; false when
// neither knows it.
func (p *Provider) SpotPrice(instanceType, zone string) (float64, bool) {
	p.mu.RLock()
	price, ok := p.spot[instanceType][zone]
	p.mu.RUnlock()
	if ok {
		return price, true
	}
	od, ok := p.fallback[instanceType]
	if !ok {
		return 0, false
	}
	return catalog.SpotPrice(instanceType, zone, od), true
}

// SeqNum changes whenever a refresh changes the prices; caches of priced
// results keep it in their key.
func (p *Provider) SeqNum() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.seqNum
}

// Status returns what the last refreshes did.
func (p *Provider) Status() Status {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.status
}

// Refresh fetches on-demand prices (unless the Price List API is not called
// here) and spot prices. A failed part keeps the prices it had; the errors of
// both parts are returned joined.
func (p *Provider) Refresh(ctx context.Context) error {
	var errs []error
	if CallsPricingAPI(p.region, p.isolated) {
		if err := p.RefreshOnDemand(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.RefreshSpot(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RefreshOnDemand fetches every on-demand Linux price of the region from the
// Price List API: shared-tenancy compute instances, then bare-metal ones,
// which the price list files under dedicated tenancy. Entries that cannot be
// parsed are skipped and counted.
func (p *Provider) RefreshOnDemand(ctx context.Context) error {
	if !CallsPricingAPI(p.region, p.isolated) {
		return fmt.Errorf("refreshing on-demand prices: the Price List API is not called in region %s (isolated VPC: %v)", p.region, p.isolated)
	}
	prices := map[string]float64{}
	skipped := 0
	for _, q := range []struct{ tenancy, productFamily string }{
		{"Shared", "Compute Instance"},
		{"Dedicated", "Compute Instance (bare metal)"},
	} {
		n, err := p.getProducts(ctx, q.tenancy, q.productFamily, prices)
		skipped += n
		if err != nil {
			return fmt.Errorf("refreshing on-demand prices (tenancy %s, %s): %w", q.tenancy, q.productFamily, err)
		}
	}
	if len(prices) == 0 {
		return fmt.Errorf("refreshing on-demand prices: the price list has no usable price for region %s (%d entries skipped)", p.region, skipped)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onDemand = prices
	p.status.OnDemandUpdated = p.clock.Now()
	p.status.OnDemandPrices = len(prices)
	p.status.SkippedEntries = skipped
	p.seqNum++
	return nil
}

// getProducts pages through one GetProducts query, adding the prices of types
// not yet in prices, and returns how many entries it skipped.
func (p *Provider) getProducts(ctx context.Context, tenancy, productFamily string, prices map[string]float64) (int, error) {
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	in := &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			term("regionCode", p.region),
			term("serviceCode", "AmazonEC2"),
			term("preInstalledSw", "NA"),
			term("operatingSystem", "Linux"),
			term("capacitystatus", "Used"),
			term("marketoption", "OnDemand"),
			term("tenancy", tenancy),
			term("productFamily", productFamily),
		},
	}
	cur := currency(p.region)
	skipped := 0
	pages := pricing.NewGetProductsPaginator(p.pricing, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return skipped, fmt.Errorf("GetProducts: %w", err)
		}
		for _, raw := range out.PriceList {
			name, price, err := parsePriceListEntry(raw, cur)
			if err != nil {
				skipped++
				continue
			}
			if _, seen := prices[name]; !seen {
				prices[name] = price
			}
		}
	}
	return skipped, nil
}

// RefreshSpot fetches the current spot price of every Linux type and zone
// from DescribeSpotPriceHistory (StartTime now, which returns the price in
// effect), keeping the newest price per type and zone.
func (p *Provider) RefreshSpot(ctx context.Context) error {
	type key struct{ instanceType, zone string }
	type observed struct {
		price float64
		at    time.Time
	}
	newest := map[key]observed{}
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{productLinux, productLinuxVPC},
		StartTime:           aws.Time(p.clock.Now()),
		MaxResults:          aws.Int32(2000),
	}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("refreshing spot prices: DescribeSpotPriceHistory: %w", err)
		}
		for _, sp := range out.SpotPriceHistory {
			if sp.InstanceType == "" || sp.AvailabilityZone == nil || sp.SpotPrice == nil {
				continue
			}
			price, err := parsePrice(*sp.SpotPrice)
			if err != nil {
				continue
			}
			var at time.Time
			if sp.Timestamp != nil {
				at = *sp.Timestamp
			}
			k := key{string(sp.InstanceType), *sp.AvailabilityZone}
			if prev, ok := newest[k]; ok && !at.After(prev.at) {
				continue
			}
			newest[k] = observed{price: price, at: at}
		}
	}
	if len(newest) == 0 {
		return errors.New("refreshing spot prices: DescribeSpotPriceHistory returned no usable price")
	}
	spot := map[string]map[string]float64{}
	for k, o := range newest {
		if spot[k.instanceType] == nil {
			spot[k.instanceType] = map[string]float64{}
		}
		spot[k.instanceType][k.zone] = o.price
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spot = spot
	p.status.SpotUpdated = p.clock.Now()
	p.status.SpotPrices = len(newest)
	p.seqNum++
	return nil
}
