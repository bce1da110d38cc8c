package pricing

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readFixture returns a price-list entry from testdata.
func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// entry builds a minimal price-list entry with one price dimension.
func entry(instanceType, currency, price string) string {
	return `{"product":{"attributes":{"instanceType":"` + instanceType + `"}},"terms":{"OnDemand":{"SKU.TERM":{"priceDimensions":{"SKU.TERM.RATE":{"unit":"Hrs","pricePerUnit":{"` + currency + `":"` + price + `"}}}}}}}`
}

func TestParsePriceListEntry(t *testing.T) {
	type result struct {
		Name  string
		Price float64
		Err   string
	}
	cases := map[string]struct {
		raw, currency string
		want          result
	}{
		"AWS-shaped m5.large":       {raw: readFixture(t, "m5.large.json"), currency: "USD", want: result{Name: "m5.large", Price: 0.096}},
		"AWS-shaped m5.metal":       {raw: readFixture(t, "m5.metal.json"), currency: "USD", want: result{Name: "m5.metal", Price: 4.608}},
		"CNY":                       {raw: entry("m5.large", "CNY", "0.6510000000"), currency: "CNY", want: result{Name: "m5.large", Price: 0.651}},
		"other currency only":       {raw: entry("m5.large", "CNY", "0.651"), currency: "USD", want: result{Err: "no positive on-demand price"}},
		"not JSON":                  {raw: `{"product":`, currency: "USD", want: result{Err: "decoding price-list entry"}},
		"JSON of the wrong shape":   {raw: `{"product":"m5.large"}`, currency: "USD", want: result{Err: "decoding price-list entry"}},
		"no instance type":          {raw: entry("", "USD", "0.1"), currency: "USD", want: result{Err: "no product.attributes.instanceType"}},
		"no terms":                  {raw: `{"product":{"attributes":{"instanceType":"m5.large"}}}`, currency: "USD", want: result{Err: "no positive on-demand price"}},
		"zero price":                {raw: entry("m5.large", "USD", "0.0000000000"), currency: "USD", want: result{Err: "no positive on-demand price"}},
		"negative price":            {raw: entry("m5.large", "USD", "-1"), currency: "USD", want: result{Err: "no positive on-demand price"}},
		"price not a number":        {raw: entry("m5.large", "USD", "cheap"), currency: "USD", want: result{Err: `parsing price "cheap"`}},
		"infinite price":            {raw: entry("m5.large", "USD", "Inf"), currency: "USD", want: result{Err: "no positive on-demand price"}},
		"zero dimension then price": {raw: `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A":{"priceDimensions":{"A.1":{"pricePerUnit":{"USD":"0"}},"A.2":{"pricePerUnit":{"USD":"0.2"}}}}}}}`, currency: "USD", want: result{Name: "m5.large", Price: 0.2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, p, err := parsePriceListEntry(tc.raw, tc.currency)
			got := result{Name: n, Price: p}
			if err != nil {
				got = result{Err: err.Error()}
				if tc.want.Err != "" && strings.Contains(got.Err, tc.want.Err) {
					got.Err = tc.want.Err
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parsePriceListEntry (-want +got):\n%s", diff)
			}
		})
	}
}
