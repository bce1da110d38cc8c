package instancetype

import (
	"fmt"
	"slices"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

// compute builds the instance types of nc from the EC2 data: capacity and
// overhead by the catalog formulas for nc's settings, offerings priced and
// marked by availability, and the zone-ID requirement from nc's subnets.
func (p *Provider) compute(nc *awsv1.EC2NodeClass, data *ec2Data) ([]*cloudprovider.InstanceType, error) {
	its, err := catalog.Compute(data.facts, CatalogOptions(nc, p.settings))
	if err != nil {
		return nil, fmt.Errorf("computing instance types for EC2NodeClass %s: %w", nc.Name, err)
	}
	zones, zoneIDs := subnetZones(nc.Status.Subnets)
	kept := its[:0]
	for _, it := range its {
		it.Offerings = p.offerings(it.Name, zones, data)
		if len(it.Offerings) > 0 {
			kept = append(kept, it)
		}
	}
	out := ec2types.FromCatalog(kept)
	if len(zoneIDs) > 0 {
		for _, it := range out {
			it.Requirements = it.Requirements.Add(ec2types.ZoneIDRequirement(it.Offerings, zoneIDs))
		}
	}
	return out, nil
}

// subnetZones returns the sorted zones of the subnets and their zone IDs.
func subnetZones(subnets []awsv1.Subnet) ([]string, map[string]string) {
	var zones []string
	ids := map[string]string{}
	for _, s := range subnets {
		if s.Zone == "" {
			continue
		}
		if !slices.Contains(zones, s.Zone) {
			zones = append(zones, s.Zone)
		}
		if s.ZoneID != "" {
			ids[s.Zone] = s.ZoneID
		}
	}
	slices.Sort(zones)
	return zones, ids
}

// offerings returns, per zone that offers the type, its on-demand and spot
// offerings (each when the type supports the capacity type and has a price
// for it), marked unavailable per the unavailable-offerings cache.
func (p *Provider) offerings(name string, zones []string, data *ec2Data) []catalog.Offering {
	var out []catalog.Offering
	add := func(zone, capacityType string, price float64, ok bool) {
		if !ok {
			return
		}
		out = append(out, catalog.Offering{
			Zone:         zone,
			CapacityType: capacityType,
			Price:        price,
			Available:    !p.unavailable.IsUnavailable(name, zone, capacityType),
		})
	}
	for _, zone := range zones {
		if !data.zones[name][zone] {
			continue
		}
		if data.onDemand[name] {
			price, ok := p.prices.OnDemandPrice(name)
			add(zone, karpv1.CapacityTypeOnDemand, price, ok)
		}
		if data.spot[name] {
			price, ok := p.prices.SpotPrice(name, zone)
			add(zone, karpv1.CapacityTypeSpot, price, ok)
		}
	}
	return out
}
