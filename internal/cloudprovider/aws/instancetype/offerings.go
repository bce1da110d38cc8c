package instancetype

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

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
	p.addReserved(out, nc, zones)
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

// ReservedPriceFactor prices a reserved offering as this fraction of the
// on-demand price of its type: the reservation is paid for whether used or
// not, so filling it costs nearly nothing, and the simulator fills it
// before any spot or on-demand offering while keeping cheaper types first.
const ReservedPriceFactor = 1e-7

// Reservations tells how many more instances each capacity reservation
// takes (*capacityreservation.Provider).
type Reservations interface {
	// Available is the count for a reservation; ok is false when unknown.
	Available(id string) (n int, ok bool)
	// SeqNum changes whenever a count does.
	SeqNum() uint64
}

// addReserved gives each type one reserved offering per active reservation
// of nc for it in one of zones, available while the reservation has room
// and EC2 has not refused it lately, and widens the type's zone and
// capacity-type requirements to match.
func (p *Provider) addReserved(its []*cloudprovider.InstanceType, nc *awsv1.EC2NodeClass, zones []string) {
	if len(nc.Status.CapacityReservations) == 0 {
		return
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	changed := map[*cloudprovider.InstanceType]bool{}
	for _, cr := range nc.Status.CapacityReservations {
		it, ok := byName[cr.InstanceType]
		if !ok || !slices.Contains(zones, cr.AvailabilityZone) || cr.State == awsv1.CapacityReservationStateExpiring {
			continue
		}
		price, ok := p.prices.OnDemandPrice(it.Name)
		if !ok {
			continue
		}
		count := p.reservationCount(cr)
		it.Offerings = append(it.Offerings, cloudprovider.Offering{
			Zone:                cr.AvailabilityZone,
			CapacityType:        karpv1.CapacityTypeReserved,
			Price:               price * ReservedPriceFactor,
			Available:           count > 0 && !p.unavailable.IsUnavailable(it.Name, cr.AvailabilityZone, karpv1.CapacityTypeReserved),
			ReservationID:       cr.ID,
			ReservationCapacity: count,
		})
		changed[it] = true
	}
	for it := range changed {
		it.Requirements = it.Requirements.Without(corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey).
			Add(ec2types.OfferingRequirements(it.Offerings)...)
	}
}

// reservationCount is a reservation's count as the reservation tracker
// has it, else as the status says.
func (p *Provider) reservationCount(cr awsv1.CapacityReservation) int {
	if p.reservations != nil {
		if n, ok := p.reservations.Available(cr.ID); ok {
			return n
		}
	}
	if cr.AvailableInstanceCount == nil {
		return 0
	}
	return int(*cr.AvailableInstanceCount)
}
