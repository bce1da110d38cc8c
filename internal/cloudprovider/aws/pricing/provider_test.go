package pricing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// fakePricing serves GetProducts pages per product family; "next" tokens
// are page indexes. It records the filters of every call.
type fakePricing struct {
	mu    sync.Mutex
	pages map[string][][]string
	err   error
	calls []map[string]string
}

func (f *fakePricing) GetProducts(_ context.Context, in *pricing.GetProductsInput, _ ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	filters := map[string]string{"ServiceCode": aws.ToString(in.ServiceCode)}
	for _, fl := range in.Filters {
		filters[aws.ToString(fl.Field)] = string(fl.Type) + " " + aws.ToString(fl.Value)
	}
	f.calls = append(f.calls, filters)
	if f.err != nil {
		return nil, f.err
	}
	pages := f.pages[aws.ToString(in.Filters[len(in.Filters)-1].Value)]
	i := 0
	if in.NextToken != nil {
		if _, err := fmt.Sscanf(*in.NextToken, "%d", &i); err != nil {
			return nil, fmt.Errorf("bad NextToken %q: %w", *in.NextToken, err)
		}
	}
	if i >= len(pages) {
		return &pricing.GetProductsOutput{}, nil
	}
	out := &pricing.GetProductsOutput{PriceList: pages[i]}
	if i+1 < len(pages) {
		out.NextToken = aws.String(fmt.Sprint(i + 1))
	}
	return out, nil
}

// fakeEC2 serves DescribeSpotPriceHistory pages.
type fakeEC2 struct {
	sdk.EC2
	mu    sync.Mutex
	pages [][]ec2types.SpotPrice
	err   error
	calls []*ec2.DescribeSpotPriceHistoryInput
}

func (f *fakeEC2) DescribeSpotPriceHistory(_ context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	if f.err != nil {
		return nil, f.err
	}
	i := 0
	if in.NextToken != nil {
		if _, err := fmt.Sscanf(*in.NextToken, "%d", &i); err != nil {
			return nil, fmt.Errorf("bad NextToken %q: %w", *in.NextToken, err)
		}
	}
	if i >= len(f.pages) {
		return &ec2.DescribeSpotPriceHistoryOutput{}, nil
	}
	out := &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: f.pages[i]}
	if i+1 < len(f.pages) {
		out.NextToken = aws.String(fmt.Sprint(i + 1))
	}
	return out, nil
}

var epoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func spot(instanceType, zone, price string, at time.Time) ec2types.SpotPrice {
	return ec2types.SpotPrice{InstanceType: ec2types.InstanceType(instanceType), AvailabilityZone: aws.String(zone), SpotPrice: aws.String(price), Timestamp: aws.Time(at), ProductDescription: productLinuxVPC}
}

// catalogOnDemand returns the catalog's on-demand price of a type.
func catalogOnDemand(t *testing.T, name string) float64 {
	t.Helper()
	facts, err := catalog.Facts()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Name == name && f.OnDemandPrice != nil {
			return *f.OnDemandPrice
		}
	}
	t.Fatalf("no catalog price for %s", name)
	return 0
}

func TestFallbackBeforeRefresh(t *testing.T) {
	p, err := New(&fakePricing{}, &fakeEC2{}, clocktesting.NewFakeClock(epoch), Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	od, ok := p.OnDemandPrice("m5.large")
	if !ok || od != catalogOnDemand(t, "m5.large") {
		t.Errorf("OnDemandPrice(m5.large) = %v, %v; want the catalog's %v", od, ok, catalogOnDemand(t, "m5.large"))
	}
	sp, ok := p.SpotPrice("m5.large", "us-east-1a")
	if want := catalog.SpotPrice("m5.large", "us-east-1a", od); !ok || sp != want {
		t.Errorf("SpotPrice(m5.large, us-east-1a) = %v, %v; want the catalog's %v", sp, ok, want)
	}
	if _, ok := p.OnDemandPrice("m99.huge"); ok {
		t.Error("OnDemandPrice of an unknown type is known")
	}
	if _, ok := p.SpotPrice("m99.huge", "us-east-1a"); ok {
		t.Error("SpotPrice of an unknown type is known")
	}
	if diff := cmp.Diff(Status{}, p.Status()); diff != "" {
		t.Errorf("Status before refresh (-want +got):\n%s", diff)
	}
}

func TestRefreshOnDemand(t *testing.T) {
	fp := &fakePricing{pages: map[string][][]string{
		"Compute Instance": {
			{readFixture(t, "m5.large.json"), entry("c5.large", "USD", "0.0850000000"), `{"broken`},
			{entry("", "USD", "1"), entry("t3.micro", "USD", "0.0104000000")},
		},
		"Compute Instance (bare metal)": {
			{readFixture(t, "m5.metal.json"), entry("m5.large", "USD", "9.99")},
		},
	}}
	clk := clocktesting.NewFakeClock(epoch)
	p, err := New(fp, &fakeEC2{}, clk, Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	seq := p.SeqNum()
	if err := p.RefreshOnDemand(context.Background()); err != nil {
		t.Fatalf("RefreshOnDemand: %v", err)
	}
	got := map[string]float64{}
	for _, name := range []string{"m5.large", "c5.large", "t3.micro", "m5.metal"} {
		got[name], _ = p.OnDemandPrice(name)
	}
	want := map[string]float64{"m5.large": 0.096, "c5.large": 0.085, "t3.micro": 0.0104, "m5.metal": 4.608}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
	// A type the price list lacks keeps the catalog's price.
	if got, _ := p.OnDemandPrice("m6i.large"); got != catalogOnDemand(t, "m6i.large") {
		t.Errorf("OnDemandPrice(m6i.large) = %v, want the catalog's", got)
	}
	wantStatus := Status{OnDemandUpdated: epoch, OnDemandPrices: 4, SkippedEntries: 2}
	if diff := cmp.Diff(wantStatus, p.Status()); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	if p.SeqNum() == seq {
		t.Error("SeqNum did not change")
	}
	// Three pages, each with the filters Karpenter sends.
	if len(fp.calls) != 3 {
		t.Fatalf("GetProducts called %d times, want 3", len(fp.calls))
	}
	wantFilters := map[string]string{
		"ServiceCode":     "AmazonEC2",
		"regionCode":      "TERM_MATCH us-east-1",
		"serviceCode":     "TERM_MATCH AmazonEC2",
		"preInstalledSw":  "TERM_MATCH NA",
		"operatingSystem": "TERM_MATCH Linux",
		"capacitystatus":  "TERM_MATCH Used",
		"marketoption":    "TERM_MATCH OnDemand",
		"tenancy":         "TERM_MATCH Dedicated",
		"productFamily":   "TERM_MATCH Compute Instance (bare metal)",
	}
	if diff := cmp.Diff(wantFilters, fp.calls[2]); diff != "" {
		t.Errorf("bare-metal query filters (-want +got):\n%s", diff)
	}
	if got := fp.calls[0]["tenancy"] + "/" + fp.calls[0]["productFamily"]; got != "TERM_MATCH Shared/TERM_MATCH Compute Instance" {
		t.Errorf("first query = %s", got)
	}
}

func TestRefreshOnDemandFailuresKeepPrices(t *testing.T) {
	cases := map[string]struct {
		pricing *fakePricing
		wantErr string
	}{
		"API error":        {pricing: &fakePricing{err: errors.New("throttled")}, wantErr: "GetProducts: throttled"},
		"nothing usable":   {pricing: &fakePricing{pages: map[string][][]string{"Compute Instance": {{`{}`, `nope`}}}}, wantErr: "no usable price for region us-east-1 (2 entries skipped)"},
		"empty price list": {pricing: &fakePricing{}, wantErr: "no usable price"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := New(tc.pricing, &fakeEC2{}, clocktesting.NewFakeClock(epoch), Options{Region: "us-east-1"})
			if err != nil {
				t.Fatal(err)
			}
			err = p.RefreshOnDemand(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RefreshOnDemand error = %v, want %q", err, tc.wantErr)
			}
			if got, _ := p.OnDemandPrice("m5.large"); got != catalogOnDemand(t, "m5.large") {
				t.Errorf("after a failed refresh OnDemandPrice(m5.large) = %v, want the catalog's", got)
			}
			if !p.Status().OnDemandUpdated.IsZero() {
				t.Error("a failed refresh set OnDemandUpdated")
			}
		})
	}
}

func TestIsolatedVPCNeverCallsPricing(t *testing.T) {
	cases := map[string]Options{
		"isolated VPC": {Region: "us-east-1", IsolatedVPC: true},
		"us-gov":       {Region: "us-gov-west-1"},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			fe := &fakeEC2{pages: [][]ec2types.SpotPrice{{spot("m5.large", "z1", "0.03", epoch)}}}
			p, err := New(nil, fe, clocktesting.NewFakeClock(epoch), opts)
			if err != nil {
				t.Fatalf("New without a Pricing client: %v", err)
			}
			if err := p.Refresh(context.Background()); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if got, _ := p.OnDemandPrice("m5.large"); got != catalogOnDemand(t, "m5.large") {
				t.Errorf("OnDemandPrice(m5.large) = %v, want the catalog's", got)
			}
			if got, _ := p.SpotPrice("m5.large", "z1"); got != 0.03 {
				t.Errorf("SpotPrice(m5.large, z1) = %v, want 0.03 (spot prices come from EC2)", got)
			}
			if err := p.RefreshOnDemand(context.Background()); err == nil {
				t.Error("RefreshOnDemand succeeded where the Price List API must not be called")
			}
		})
	}
	if _, err := New(nil, &fakeEC2{}, clocktesting.NewFakeClock(epoch), Options{Region: "us-east-1"}); err == nil {
		t.Error("New without a Pricing client in a normal region succeeded")
	}
}

func TestRefreshSpot(t *testing.T) {
	fe := &fakeEC2{pages: [][]ec2types.SpotPrice{
		{
			spot("m5.large", "us-east-1a", "0.0400", epoch.Add(-2*time.Hour)),
			spot("m5.large", "us-east-1a", "0.0350", epoch.Add(-time.Hour)),
			spot("m5.large", "us-east-1b", "0.0380", epoch.Add(-time.Hour)),
		},
		{
			spot("m5.large", "us-east-1a", "0.0390", epoch.Add(-3*time.Hour)),
			spot("c5.large", "us-east-1a", "garbage", epoch),
			spot("c5.large", "us-east-1b", "0", epoch),
			{InstanceType: "c5.large"},
		},
	}}
	clk := clocktesting.NewFakeClock(epoch)
	p, err := New(&fakePricing{}, fe, clk, Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RefreshSpot(context.Background()); err != nil {
		t.Fatalf("RefreshSpot: %v", err)
	}
	type probe struct{ instanceType, zone string }
	got := map[probe]float64{}
	for _, pr := range []probe{{"m5.large", "us-east-1a"}, {"m5.large", "us-east-1b"}, {"m5.large", "us-east-1c"}, {"c5.large", "us-east-1a"}} {
		got[pr], _ = p.SpotPrice(pr.instanceType, pr.zone)
	}
	od := catalogOnDemand(t, "m5.large")
	want := map[probe]float64{
		{"m5.large", "us-east-1a"}: 0.035, // the newest of three
		{"m5.large", "us-east-1b"}: 0.038,
		{"m5.large", "us-east-1c"}: catalog.SpotPrice("m5.large", "us-east-1c", od),
		{"c5.large", "us-east-1a"}: catalog.SpotPrice("c5.large", "us-east-1a", catalogOnDemand(t, "c5.large")),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spot prices (-want +got):\n%s", diff)
	}
	if len(fe.calls) != 2 {
		t.Fatalf("DescribeSpotPriceHistory called %d times, want 2", len(fe.calls))
	}
	in := fe.calls[0]
	if diff := cmp.Diff([]string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}, in.ProductDescriptions); diff != "" {
		t.Errorf("ProductDescriptions (-want +got):\n%s", diff)
	}
	if !aws.ToTime(in.StartTime).Equal(epoch) {
		t.Errorf("StartTime = %v, want the clock's now %v", aws.ToTime(in.StartTime), epoch)
	}
	if diff := cmp.Diff(Status{SpotUpdated: epoch, SpotPrices: 2}, p.Status()); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	// A failed refresh keeps the fetched prices.
	fe.err = errors.New("unavailable")
	clk.Step(RefreshInterval)
	if err := p.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "DescribeSpotPriceHistory: unavailable") {
		t.Errorf("Refresh error = %v, want the spot error", err)
	}
	if got, _ := p.SpotPrice("m5.large", "us-east-1a"); got != 0.035 {
		t.Errorf("after a failed refresh SpotPrice = %v, want 0.035", got)
	}
}

func TestEndpointRegion(t *testing.T) {
	cases := map[string]string{
		"us-east-1": "us-east-1", "us-west-2": "us-east-1", "ap-northeast-1": "ap-south-1",
		"eu-west-1": "eu-central-1", "cn-north-1": "cn-northwest-1", "sa-east-1": "us-east-1",
	}
	got := map[string]string{}
	for region := range cases {
		got[region] = EndpointRegion(region)
	}
	if diff := cmp.Diff(cases, got); diff != "" {
		t.Errorf("EndpointRegion (-want +got):\n%s", diff)
	}
}
