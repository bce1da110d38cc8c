package pricing

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// priceListEntry is the part of one Price List API product (one string of
// GetProductsOutput.PriceList) that holds an on-demand price:
//
//	{"product": {"attributes": {"instanceType": "m5.large", ...}, ...},
//	 "terms": {"OnDemand": {"<sku>.<offerTermCode>": {"priceDimensions":
//	   {"<sku>.<offerTermCode>.<rateCode>": {"unit": "Hrs",
//	     "pricePerUnit": {"USD": "0.0960000000"}, ...}}, ...}}}}
type priceListEntry struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// errNoPrice is returned for an entry without a positive price.
var errNoPrice = errors.New("no positive on-demand price")

// parsePriceListEntry returns the instance type and hourly on-demand price,
// in currency (USD, or CNY in the China regions), of one price-list entry.
// Terms and dimensions are read in key order and the first positive price
// wins, so the result does not depend on map order.
func parsePriceListEntry(raw, currency string) (string, float64, error) {
	var e priceListEntry
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return "", 0, fmt.Errorf("decoding price-list entry: %w", err)
	}
	name := e.Product.Attributes.InstanceType
	if name == "" {
		return "", 0, errors.New("price-list entry has no product.attributes.instanceType")
	}
	for _, termKey := range slices.Sorted(maps.Keys(e.Terms.OnDemand)) {
		dims := e.Terms.OnDemand[termKey].PriceDimensions
		for _, dimKey := range slices.Sorted(maps.Keys(dims)) {
			s, ok := dims[dimKey].PricePerUnit[currency]
			if !ok {
				continue
			}
			price, err := parsePrice(s)
			if errors.Is(err, errNoPrice) {
				continue
			}
			if err != nil {
				return "", 0, fmt.Errorf("%s: %s price: %w", name, currency, err)
			}
			return name, price, nil
		}
	}
	return "", 0, fmt.Errorf("%s: %w in %s", name, errNoPrice, currency)
}

// parsePrice parses a decimal price; errNoPrice when it is not positive
// and finite.
func parsePrice(s string) (float64, error) {
	price, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing price %q: %w", s, err)
	}
	if !(price > 0) || math.IsInf(price, 0) {
		return 0, fmt.Errorf("price %q: %w", s, errNoPrice)
	}
	return price, nil
}
