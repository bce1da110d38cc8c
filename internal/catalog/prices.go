package catalog

// OfferingKey identifies an offering: an instance type sold in a zone with
// a capacity type.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// Prices maps every offering of the catalog (for opts) to its hourly price,
// so that callers can price a node from its labels.
type Prices map[OfferingKey]float64

// LoadPrices returns the catalog's offering prices for opts.
func LoadPrices(opts Options) (Prices, error) {
	types, err := Load(opts)
	if err != nil {
		return nil, err
	}
	out := Prices{}
	for _, it := range types {
		for _, o := range it.Offerings {
			out[OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = o.Price
		}
	}
	return out, nil
}

// OfLabels prices a node from its instance-type, zone and capacity-type
// labels; 0 when the offering is unknown.
func (p Prices) OfLabels(labels map[string]string) float64 {
	return p[OfferingKey{
		InstanceType: labels["node.kubernetes.io/instance-type"],
		Zone:         labels["topology.kubernetes.io/zone"],
		CapacityType: labels["karpenter.sh/capacity-type"],
	}]
}
