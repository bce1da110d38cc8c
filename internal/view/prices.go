package view

import (
	"fmt"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// PricesNote says where DefaultPrices come from, for the header.
const PricesNote = "prices: embedded EC2 catalog (us-east-1, on-demand and spot) and Karpenter's kwok types"

// Prices are hourly prices by instance type, zone and capacity type.
type Prices map[offeringKey]float64

type offeringKey struct{ instanceType, zone, capacityType string }

// Price is the hourly price of an offering and whether it is known.
func (p Prices) Price(instanceType, zone, capacityType string) (float64, bool) {
	price, ok := p[offeringKey{instanceType, zone, capacityType}]
	return price, ok
}

// NewPrices indexes the offerings of instance types.
func NewPrices(types ...[]*cloudprovider.InstanceType) Prices {
	p := Prices{}
	for _, list := range types {
		for _, it := range list {
			for _, o := range it.Offerings {
				p[offeringKey{it.Name, o.Zone, o.CapacityType}] = o.Price
			}
		}
	}
	return p
}

// DefaultPrices are the prices the rest of the CLI uses: the embedded EC2
// catalog (as simulate and explain), and Karpenter's kwok instance types
// at the prices the kwok provider gives them.
func DefaultPrices() (Prices, error) {
	ec2, err := whatif.CatalogInstanceTypes()
	if err != nil {
		return nil, fmt.Errorf("loading prices: %w", err)
	}
	return NewPrices(ec2, kwok.KarpenterKWOKInstanceTypes()), nil
}
