package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

func newClient(t *testing.T, s *Service, creds aws.CredentialsProvider) *pricing.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return pricing.New(pricing.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds, Retryer: aws.NopRetryer{}})
}

func static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")
}

func term(field, value string) types.Filter {
	return types.Filter{Type: types.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
}

// karpenterFilters are the filters Karpenter sends for one product family.
func karpenterFilters(region, tenancy, family string) []types.Filter {
	return []types.Filter{
		term("regionCode", region), term("serviceCode", "AmazonEC2"), term("preInstalledSw", "NA"),
		term("operatingSystem", "Linux"), term("capacitystatus", "Used"), term("marketoption", "OnDemand"),
		term("tenancy", tenancy), term("productFamily", family),
	}
}

// priceItem is the part of a price-list document Karpenter reads.
type priceItem struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
		SKU           string            `json:"sku"`
	} `json:"product"`
	ServiceCode string `json:"serviceCode"`
	Terms       struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// collect pages through GetProducts with the SDK paginator and returns
// instance type -> USD price, checking every document's shape.
func collect(t *testing.T, c *pricing.Client, in *pricing.GetProductsInput) (map[string]float64, int) {
	t.Helper()
	prices := map[string]float64{}
	pages := 0
	pager := pricing.NewGetProductsPaginator(c, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("NextPage: %v", err)
		}
		pages++
		if *page.FormatVersion != "aws_v1" {
			t.Fatalf("FormatVersion = %s", *page.FormatVersion)
		}
		for _, doc := range page.PriceList {
			var item priceItem
			if err := json.Unmarshal([]byte(doc), &item); err != nil {
				t.Fatalf("price list item: %v\n%s", err, doc)
			}
			if len(item.Terms.OnDemand) != 1 {
				t.Fatalf("want one OnDemand term: %s", doc)
			}
			for code, term := range item.Terms.OnDemand {
				if code != item.Product.SKU+".JRTCKXETXF" {
					t.Fatalf("term code %s for sku %s", code, item.Product.SKU)
				}
				for _, dim := range term.PriceDimensions {
					price, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
					if err != nil || dim.Unit != "Hrs" {
						t.Fatalf("price dimension %+v: %v", dim, err)
					}
					prices[item.Product.Attributes["instanceType"]] = price
				}
			}
		}
	}
	return prices, pages
}

func TestKarpenterQueries(t *testing.T) {
	s, err := New(Config{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	facts, err := catalog.Facts()
	if err != nil {
		t.Fatal(err)
	}
	wantShared, wantMetal := map[string]float64{}, map[string]float64{}
	for _, f := range facts {
		if f.OnDemandPrice == nil {
			continue
		}
		if isMetal(f) {
			wantMetal[f.Name] = *f.OnDemandPrice
		} else {
			wantShared[f.Name] = *f.OnDemandPrice
		}
	}
	c := newClient(t, s, static())
	for _, tc := range []struct {
		name, tenancy, family string
		want                  map[string]float64
	}{
		{"shared", "Shared", "Compute Instance", wantShared},
		{"bare metal", "Dedicated", "Compute Instance (bare metal)", wantMetal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := collect(t, c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), FormatVersion: aws.String("aws_v1"),
				Filters: karpenterFilters("us-east-1", tc.tenancy, tc.family)})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("prices (-want +got):\n%s", diff)
			}
			if wantPages := (len(tc.want) + 99) / 100; pages != wantPages {
				t.Errorf("pages = %d, want %d", pages, wantPages)
			}
		})
	}
	if len(wantMetal) == 0 || wantShared["m5.large"] == 0 {
		t.Fatalf("catalog lacks m5.large or metal types")
	}
}

func TestDocumentShape(t *testing.T) {
	price := 0.096
	s, _ := New(Config{InstanceTypes: []schema.InstanceType{{Name: "m5.large", Size: "large", CPU: 2, MemoryMiB: 8192, OnDemandPrice: &price}},
		Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	c := newClient(t, s, static())
	out, err := c.GetProducts(context.Background(), &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: karpenterFilters("us-east-1", "Shared", "Compute Instance")})
	if err != nil || len(out.PriceList) != 1 {
		t.Fatalf("GetProducts = %v, %v", out, err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out.PriceList[0]), &doc); err != nil {
		t.Fatal(err)
	}
	product := doc["product"].(map[string]any)
	sku := product["sku"].(string)
	want := map[string]any{
		"product": map[string]any{"productFamily": "Compute Instance", "sku": sku, "attributes": map[string]any{
			"servicecode": "AmazonEC2", "servicename": "Amazon Elastic Compute Cloud", "regionCode": "us-east-1",
			"location": "US East (N. Virginia)", "locationType": "AWS Region", "instanceType": "m5.large", "tenancy": "Shared",
			"operatingSystem": "Linux", "preInstalledSw": "NA", "licenseModel": "No License required", "capacitystatus": "Used",
			"marketoption": "OnDemand", "operation": "RunInstances", "usagetype": "BoxUsage:m5.large",
			"processorArchitecture": "64-bit", "vcpu": "2", "memory": "8 GiB"}},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{"OnDemand": map[string]any{sku + ".JRTCKXETXF": map[string]any{
			"priceDimensions": map[string]any{sku + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
				"unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": []any{}, "rateCode": sku + ".JRTCKXETXF.6YS6EN2CT7",
				"description": "$0.096 per On Demand Linux m5.large Instance Hour", "pricePerUnit": map[string]any{"USD": "0.0960000000"}}},
			"sku": sku, "effectiveDate": "2026-01-01T00:00:00Z", "offerTermCode": "JRTCKXETXF", "termAttributes": map[string]any{}}}},
		"version": "local", "publicationDate": "2026-01-01T00:00:00Z",
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
	if len(sku) != 16 {
		t.Errorf("sku %q is not 16 characters", sku)
	}
}

func TestSetPriceAndFilters(t *testing.T) {
	one := 1.0
	s, _ := New(Config{PriceRegions: []string{"us-east-1", "eu-west-1"}, InstanceTypes: []schema.InstanceType{
		{Name: "a.large", Size: "large", OnDemandPrice: &one}, {Name: "b.metal", Size: "metal", OnDemandPrice: &one}, {Name: "c.large", Size: "large"}}})
	if s.SetPrice("eu-west-1", "a.large", 2.5) != true || s.SetPrice("eu-west-1", "d.xlarge", 4) != false || !s.DeletePrice("us-east-1", "b.metal") {
		t.Fatal("SetPrice/DeletePrice reported the wrong existence")
	}
	if p, ok := s.Price("eu-west-1", "a.large"); !ok || p != 2.5 {
		t.Fatalf("Price = %v, %v", p, ok)
	}
	c := newClient(t, s, static())
	cases := map[string]struct {
		filters []types.Filter
		want    map[string]float64
	}{
		"eu shared":     {filters: karpenterFilters("eu-west-1", "Shared", "Compute Instance"), want: map[string]float64{"a.large": 2.5, "d.xlarge": 4}},
		"eu metal":      {filters: karpenterFilters("eu-west-1", "Dedicated", "Compute Instance (bare metal)"), want: map[string]float64{"b.metal": 1}},
		"us metal gone": {filters: karpenterFilters("us-east-1", "Dedicated", "Compute Instance (bare metal)"), want: map[string]float64{}},
		"any of":        {filters: []types.Filter{{Type: types.FilterTypeAnyOf, Field: aws.String("instanceType"), Value: aws.String("a.large, b.metal")}, term("regionCode", "us-east-1")}, want: map[string]float64{"a.large": 1}},
		"none of":       {filters: []types.Filter{{Type: types.FilterTypeNoneOf, Field: aws.String("regionCode"), Value: aws.String("us-east-1")}, {Type: types.FilterTypeContains, Field: aws.String("instanceType"), Value: aws.String("metal")}}, want: map[string]float64{"b.metal": 1}},
		"unknown field": {filters: []types.Filter{term("nope", "x")}, want: map[string]float64{}},
		"reservation":   {filters: []types.Filter{term("capacitystatus", "UnusedCapacityReservation"), term("regionCode", "us-east-1")}, want: map[string]float64{"a.large": 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _ := collect(t, c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: tc.filters})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("prices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPaginationTokens(t *testing.T) {
	s, _ := New(Config{})
	c := newClient(t, s, static())
	ctx := context.Background()
	in := &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(7), Filters: []types.Filter{term("regionCode", "us-east-1")}}
	first, err := c.GetProducts(ctx, in)
	if err != nil || len(first.PriceList) != 7 || first.NextToken == nil {
		t.Fatalf("first page: %d items, token %v, %v", len(first.PriceList), first.NextToken, err)
	}
	second, err := c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: in.ServiceCode, MaxResults: in.MaxResults, Filters: in.Filters, NextToken: first.NextToken})
	if err != nil || len(second.PriceList) != 7 {
		t.Fatalf("second page: %v", err)
	}
	skus := map[string]bool{}
	for _, doc := range append(first.PriceList, second.PriceList...) {
		var item priceItem
		_ = json.Unmarshal([]byte(doc), &item)
		skus[item.Product.SKU] = true
	}
	if len(skus) != 14 {
		t.Errorf("pages overlap: %d distinct SKUs", len(skus))
	}
	_, err = c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: in.ServiceCode, NextToken: first.NextToken, Filters: []types.Filter{term("regionCode", "eu-west-1")}})
	var bad *types.InvalidNextTokenException
	if !errors.As(err, &bad) {
		t.Fatalf("token for other filters: %v, want InvalidNextTokenException", err)
	}
}

func TestErrors(t *testing.T) {
	s, _ := New(Config{InstanceTypes: []schema.InstanceType{}})
	ctx := context.Background()
	c := newClient(t, s, static())
	cases := map[string]struct {
		client *pricing.Client
		in     *pricing.GetProductsInput
		want   string
	}{
		"other service":  {client: c, in: &pricing.GetProductsInput{ServiceCode: aws.String("AmazonRDS")}, want: "NotFoundException"},
		"format version": {client: c, in: &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), FormatVersion: aws.String("aws_v2")}, want: "InvalidParameterException"},
		"max results":    {client: c, in: &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(101)}, want: "ValidationException"},
		"filter type":    {client: c, in: &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []types.Filter{{Type: "FUZZY", Field: aws.String("a"), Value: aws.String("b")}}}, want: "ValidationException"},
		"garbage token":  {client: c, in: &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), NextToken: aws.String("%%%")}, want: "InvalidNextTokenException"},
		"unsigned":       {client: newClient(t, s, aws.AnonymousCredentials{}), in: &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")}, want: "MissingAuthenticationTokenException"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.client.GetProducts(ctx, tc.in)
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.want {
				t.Fatalf("error = %v, want %s", err, tc.want)
			}
		})
	}
	_, err := c.DescribeServices(ctx, &pricing.DescribeServicesInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnknownOperationException" {
		t.Fatalf("DescribeServices: %v", err)
	}
}

func TestMemoryText(t *testing.T) {
	got := []string{memoryText(8192), memoryText(512), memoryText(1998848), memoryText(1024 * 1024 * 24)}
	want := []string{"8 GiB", "0.5 GiB", "1,952 GiB", "24,576 GiB"}
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
