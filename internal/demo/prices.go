package demo

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
)

// offeringKey identifies an offering: where and how an instance type is sold.
type offeringKey struct{ instanceType, zone, capacityType string }

// prices maps offerings of the embedded EC2 catalog (the one the kwok
// provider launches from) to their hourly price.
type prices map[offeringKey]float64

func loadPrices() (prices, error) {
	types, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		return nil, fmt.Errorf("loading the EC2 catalog: %w", err)
	}
	out := prices{}
	for _, it := range types {
		for _, o := range it.Offerings {
			out[offeringKey{it.Name, o.Zone, o.CapacityType}] = o.Price
		}
	}
	return out, nil
}

// of returns the price of the node's offering, read from its labels.
func (p prices) of(labels map[string]string) float64 {
	return p[offeringKey{labels[corev1.LabelInstanceTypeStable], labels[corev1.LabelTopologyZone], labels[v1.CapacityTypeLabelKey]}]
}
