package instancetype

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// fakeEC2 serves the catalog as DescribeInstanceTypes pages and offers every
// type in zones. It records the inputs.
type fakeEC2 struct {
	sdk.EC2
	infos []ec2types.InstanceTypeInfo
	zones []string

	mu            sync.Mutex
	err           error
	typeCalls     []*ec2.DescribeInstanceTypesInput
	offeringCalls []*ec2.DescribeInstanceTypeOfferingsInput
}

func newFakeEC2(t testing.TB, zones ...string) *fakeEC2 {
	t.Helper()
	facts, err := catalog.Facts()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEC2{zones: zones}
	for _, fact := range facts {
		f.infos = append(f.infos, ToEC2(fact))
	}
	return f
}

// page returns items [i, i+size) of n and the next token.
func page(token *string, size, n int) (int, int, *string) {
	i := 0
	if token != nil {
		i, _ = strconv.Atoi(*token)
	}
	end := min(i+size, n)
	var next *string
	if end < n {
		next = aws.String(strconv.Itoa(end))
	}
	return i, end, next
}

func (f *fakeEC2) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.typeCalls = append(f.typeCalls, in)
	if f.err != nil {
		return nil, f.err
	}
	i, end, next := page(in.NextToken, int(aws.ToInt32(in.MaxResults)), len(f.infos))
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: f.infos[i:end], NextToken: next}, nil
}

func (f *fakeEC2) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offeringCalls = append(f.offeringCalls, in)
	if f.err != nil {
		return nil, f.err
	}
	var all []ec2types.InstanceTypeOffering
	for _, info := range f.infos {
		for _, z := range f.zones {
			all = append(all, ec2types.InstanceTypeOffering{InstanceType: info.InstanceType, Location: aws.String(z), LocationType: ec2types.LocationTypeAvailabilityZone})
		}
	}
	i, end, next := page(in.NextToken, int(aws.ToInt32(in.MaxResults)), len(all))
	return &ec2.DescribeInstanceTypeOfferingsOutput{InstanceTypeOfferings: all[i:end], NextToken: next}, nil
}

// fakePrices prices from the catalog, with overrides.
type fakePrices struct {
	mu    sync.Mutex
	known map[string]float64
	spot  map[string]float64
	seq   uint64
}

func newFakePrices(t testing.TB) *fakePrices {
	t.Helper()
	facts, err := catalog.Facts()
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePrices{known: map[string]float64{}, spot: map[string]float64{}}
	for _, f := range facts {
		if f.OnDemandPrice != nil {
			p.known[f.Name] = *f.OnDemandPrice
		}
	}
	return p
}

func (p *fakePrices) OnDemandPrice(name string) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.known[name]
	return v, ok
}

func (p *fakePrices) SpotPrice(name, zone string) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.spot[name+"/"+zone]; ok {
		return v, true
	}
	v, ok := p.known[name]
	if !ok {
		return 0, false
	}
	return catalog.SpotPrice(name, zone, v), true
}

func (p *fakePrices) SeqNum() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

func (p *fakePrices) setSpot(name, zone string, price float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spot[name+"/"+zone] = price
	p.seq++
}

// knownFacts indexes the catalog's facts by name.
func knownFacts(t testing.TB) map[string]schema.InstanceType {
	t.Helper()
	facts, err := catalog.Facts()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]schema.InstanceType{}
	for _, f := range facts {
		out[f.Name] = f
	}
	return out
}

func ptr[T any](v T) *T { return &v }
