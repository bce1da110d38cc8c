package ec2

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

// typeInfo is one catalog instance type with its DescribeInstanceTypes item.
type typeInfo struct {
	facts schema.InstanceType
	xml   instanceTypeXML
}

// typeTable is the catalog, decoded once per process.
type typeTable struct {
	list   []*typeInfo
	byName map[string]*typeInfo
}

// loadTypes decodes the catalog facts into DescribeInstanceTypes items.
var loadTypes = sync.OnceValues(func() (*typeTable, error) {
	facts, err := catalog.Facts()
	if err != nil {
		return nil, fmt.Errorf("loading catalog facts: %w", err)
	}
	t := &typeTable{byName: make(map[string]*typeInfo, len(facts))}
	for _, f := range facts {
		ti := &typeInfo{facts: f, xml: instanceTypeItem(f)}
		t.list = append(t.list, ti)
		t.byName[f.Name] = ti
	}
	return t, nil
})

// types returns the catalog; it panics only if the embedded catalog is
// corrupt, which the catalog package's own tests rule out.
func types() *typeTable {
	t, err := loadTypes()
	if err != nil {
		panic(err)
	}
	return t
}

// instanceTypeXML is one <item> of DescribeInstanceTypes' instanceTypeSet.
type instanceTypeXML struct {
	InstanceType                  string             `xml:"instanceType"`
	CurrentGeneration             bool               `xml:"currentGeneration"`
	FreeTierEligible              bool               `xml:"freeTierEligible"`
	SupportedUsageClasses         items              `xml:"supportedUsageClasses"`
	SupportedRootDeviceTypes      items              `xml:"supportedRootDeviceTypes"`
	SupportedVirtualizationTypes  items              `xml:"supportedVirtualizationTypes"`
	BareMetal                     bool               `xml:"bareMetal"`
	Hypervisor                    string             `xml:"hypervisor,omitempty"`
	ProcessorInfo                 processorInfo      `xml:"processorInfo"`
	VCPUInfo                      vcpuInfo           `xml:"vCpuInfo"`
	MemoryInfo                    sizeInMiB          `xml:"memoryInfo"`
	InstanceStorageSupported      bool               `xml:"instanceStorageSupported"`
	InstanceStorageInfo           *storageInfo       `xml:"instanceStorageInfo,omitempty"`
	EbsInfo                       ebsInfo            `xml:"ebsInfo"`
	NetworkInfo                   networkInfo        `xml:"networkInfo"`
	GpuInfo                       *gpuInfo           `xml:"gpuInfo,omitempty"`
	InferenceAcceleratorInfo      *inferenceInfo     `xml:"inferenceAcceleratorInfo,omitempty"`
	NeuronInfo                    *neuronInfo        `xml:"neuronInfo,omitempty"`
	PlacementGroupInfo            placementGroupInfo `xml:"placementGroupInfo"`
	HibernationSupported          bool               `xml:"hibernationSupported"`
	BurstablePerformanceSupported bool               `xml:"burstablePerformanceSupported"`
	DedicatedHostsSupported       bool               `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool               `xml:"autoRecoverySupported"`
}

type processorInfo struct {
	SupportedArchitectures   items    `xml:"supportedArchitectures"`
	SustainedClockSpeedInGhz *float64 `xml:"sustainedClockSpeedInGhz,omitempty"`
	Manufacturer             string   `xml:"manufacturer"`
}

type vcpuInfo struct {
	DefaultVCpus          int64 `xml:"defaultVCpus"`
	DefaultCores          int64 `xml:"defaultCores"`
	DefaultThreadsPerCore int64 `xml:"defaultThreadsPerCore"`
}

type sizeInMiB struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type storageInfo struct {
	TotalSizeInGB int64      `xml:"totalSizeInGB"`
	Disks         []diskInfo `xml:"disks>item"`
	NvmeSupport   string     `xml:"nvmeSupport"`
}

type diskInfo struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int64  `xml:"count"`
	Type     string `xml:"type"`
}

type ebsInfo struct {
	EbsOptimizedSupport string            `xml:"ebsOptimizedSupport"`
	EncryptionSupport   string            `xml:"encryptionSupport"`
	EbsOptimizedInfo    *ebsOptimizedInfo `xml:"ebsOptimizedInfo,omitempty"`
	NvmeSupport         string            `xml:"nvmeSupport"`
}

type ebsOptimizedInfo struct {
	BaselineBandwidthInMbps int64 `xml:"baselineBandwidthInMbps"`
	MaximumBandwidthInMbps  int64 `xml:"maximumBandwidthInMbps"`
}

type networkInfo struct {
	NetworkPerformance           string        `xml:"networkPerformance"`
	MaximumNetworkInterfaces     int64         `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards          int64         `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex      int64         `xml:"defaultNetworkCardIndex"`
	NetworkCards                 []networkCard `xml:"networkCards>item"`
	Ipv4AddressesPerInterface    int64         `xml:"ipv4AddressesPerInterface"`
	Ipv6AddressesPerInterface    int64         `xml:"ipv6AddressesPerInterface"`
	Ipv6Supported                bool          `xml:"ipv6Supported"`
	EnaSupport                   string        `xml:"enaSupport"`
	EfaSupported                 bool          `xml:"efaSupported"`
	EfaInfo                      *efaInfo      `xml:"efaInfo,omitempty"`
	EncryptionInTransitSupported bool          `xml:"encryptionInTransitSupported"`
}

type networkCard struct {
	NetworkCardIndex         int64  `xml:"networkCardIndex"`
	NetworkPerformance       string `xml:"networkPerformance"`
	MaximumNetworkInterfaces int64  `xml:"maximumNetworkInterfaces"`
}

type efaInfo struct {
	MaximumEfaInterfaces int64 `xml:"maximumEfaInterfaces"`
}

type gpuInfo struct {
	Gpus                []gpuDevice `xml:"gpus>item"`
	TotalGpuMemoryInMiB int64       `xml:"totalGpuMemoryInMiB"`
}

type gpuDevice struct {
	Name         string    `xml:"name"`
	Manufacturer string    `xml:"manufacturer"`
	Count        int64     `xml:"count"`
	MemoryInfo   sizeInMiB `xml:"memoryInfo"`
}

type inferenceInfo struct {
	Accelerators []acceleratorDevice `xml:"accelerators>member"`
}

type acceleratorDevice struct {
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
	Count        int64  `xml:"count"`
}

type neuronInfo struct {
	NeuronDevices []neuronDevice `xml:"neuronDevices>item"`
}

type neuronDevice struct {
	Name     string   `xml:"name"`
	Count    int64    `xml:"count"`
	CoreInfo coreInfo `xml:"coreInfo"`
}

type coreInfo struct {
	Count   int64 `xml:"count"`
	Version int64 `xml:"version"`
}

type placementGroupInfo struct {
	SupportedStrategies items `xml:"supportedStrategies"`
}

// manufacturers maps the catalog's lower-kebab manufacturer names back to
// the spelling EC2 reports (Karpenter lower-kebabs them again).
var manufacturers = map[string]string{
	"intel": "Intel", "amd": "AMD", "aws": "AWS", "nvidia": "NVIDIA",
	"qualcomm": "Qualcomm", "habana": "Habana", "xilinx": "Xilinx",
}

// spelled returns EC2's spelling of a manufacturer.
func spelled(m string) string {
	if s, ok := manufacturers[m]; ok {
		return s
	}
	return m
}

// enis returns the ENI limits to report. Types whose VPC limits the catalog
// lacks get limits that reproduce the catalog's pod count through Karpenter's
// formula maxENIs*(ipv4PerENI-1)+2: the largest maxENIs up to 15 dividing
// pods-2.
func enis(f schema.InstanceType) (maxENIs, ipv4 int64) {
	if f.ENI != nil {
		return f.ENI.MaxENIs, f.ENI.IPv4PerENI
	}
	n := f.Pods - 2
	if n <= 0 {
		return 1, 1
	}
	for m := int64(15); m >= 1; m-- {
		if n%m == 0 {
			return m, n/m + 1
		}
	}
	return 1, n + 1
}

// networkPerformance renders a bandwidth as EC2's performance string.
func networkPerformance(mbps *int64) string {
	switch {
	case mbps == nil:
		return "Up to 5 Gigabit"
	case *mbps >= 1000:
		return strconv.FormatFloat(float64(*mbps)/1000, 'f', -1, 64) + " Gigabit"
	default:
		return strconv.FormatInt(*mbps, 10) + " Megabit"
	}
}

// instanceTypeItem derives a DescribeInstanceTypes item from catalog facts
// so that Karpenter's formulas give the catalog's values
// back: labels, cpu, memory, pods, GPUs, accelerators, EFA and NVMe.
func instanceTypeItem(f schema.InstanceType) instanceTypeXML {
	arch := "x86_64"
	threads := int64(2)
	if f.Arch == "arm64" {
		arch, threads = "arm64", 1
	}
	if f.CPU%threads != 0 {
		threads = 1
	}
	maxENIs, ipv4 := enis(f)
	perf := networkPerformance(f.NetworkBandwidthMbps)
	x := instanceTypeXML{
		InstanceType:                 f.Name,
		CurrentGeneration:            !(f.Hypervisor == "xen" && f.Generation < 4),
		FreeTierEligible:             f.Name == "t2.micro" || f.Name == "t3.micro",
		SupportedUsageClasses:        items{Items: []string{"on-demand", "spot"}},
		SupportedRootDeviceTypes:     items{Items: []string{"ebs"}},
		SupportedVirtualizationTypes: items{Items: []string{"hvm"}},
		BareMetal:                    strings.Contains(f.Size, "metal"),
		Hypervisor:                   f.Hypervisor,
		ProcessorInfo: processorInfo{
			SupportedArchitectures: items{Items: []string{arch}},
			Manufacturer:           spelled(f.CPUManufacturer),
		},
		VCPUInfo:   vcpuInfo{DefaultVCpus: f.CPU, DefaultCores: f.CPU / threads, DefaultThreadsPerCore: threads},
		MemoryInfo: sizeInMiB{SizeInMiB: f.MemoryMiB},
		EbsInfo:    ebsInfo{EbsOptimizedSupport: "supported", EncryptionSupport: "supported", NvmeSupport: "required"},
		NetworkInfo: networkInfo{
			NetworkPerformance:       perf,
			MaximumNetworkInterfaces: maxENIs,
			MaximumNetworkCards:      1,
			NetworkCards: []networkCard{{
				NetworkPerformance:       perf,
				MaximumNetworkInterfaces: maxENIs,
			}},
			Ipv4AddressesPerInterface:    ipv4,
			Ipv6AddressesPerInterface:    ipv4,
			Ipv6Supported:                f.Hypervisor != "xen",
			EnaSupport:                   "supported",
			EncryptionInTransitSupported: f.EncryptionInTransit,
		},
		PlacementGroupInfo:            placementGroupInfo{SupportedStrategies: items{Items: []string{"cluster", "partition", "spread"}}},
		BurstablePerformanceSupported: strings.HasPrefix(f.Family, "t"),
		DedicatedHostsSupported:       true,
		AutoRecoverySupported:         true,
	}
	if f.CPUSustainedClockSpeedMhz > 0 {
		ghz := math.Round(float64(f.CPUSustainedClockSpeedMhz)) / 1000
		x.ProcessorInfo.SustainedClockSpeedInGhz = &ghz
	}
	if f.Hypervisor == "xen" {
		x.EbsInfo.NvmeSupport = "unsupported"
	}
	if f.EBSBandwidthMbps != nil {
		x.EbsInfo.EbsOptimizedSupport = "default"
		x.EbsInfo.EbsOptimizedInfo = &ebsOptimizedInfo{BaselineBandwidthInMbps: *f.EBSBandwidthMbps, MaximumBandwidthInMbps: *f.EBSBandwidthMbps}
	}
	if f.LocalNVMeGB != nil {
		x.InstanceStorageSupported = true
		x.InstanceStorageInfo = &storageInfo{TotalSizeInGB: *f.LocalNVMeGB, NvmeSupport: "required", Disks: []diskInfo{{SizeInGB: *f.LocalNVMeGB, Count: 1, Type: "ssd"}}}
	}
	if efa := f.ExtendedResources["vpc.amazonaws.com/efa"]; efa > 0 {
		x.NetworkInfo.EfaSupported = true
		x.NetworkInfo.EfaInfo = &efaInfo{MaximumEfaInterfaces: efa}
	}
	if g := f.GPU; g != nil {
		x.GpuInfo = &gpuInfo{
			Gpus:                []gpuDevice{{Name: g.Name, Manufacturer: spelled(g.Manufacturer), Count: g.Count, MemoryInfo: sizeInMiB{SizeInMiB: g.MemoryMiB}}},
			TotalGpuMemoryInMiB: g.Count * g.MemoryMiB,
		}
	}
	if a := f.Accelerator; a != nil {
		if a.Manufacturer == "aws" {
			cores := int64(0)
			if n := f.ExtendedResources["aws.amazon.com/neuron"]; n > 0 {
				cores = f.ExtendedResources["aws.amazon.com/neuroncore"] / n
			}
			x.NeuronInfo = &neuronInfo{NeuronDevices: []neuronDevice{{Name: a.Name, Count: a.Count, CoreInfo: coreInfo{Count: cores, Version: 2}}}}
		} else {
			x.InferenceAcceleratorInfo = &inferenceInfo{Accelerators: []acceleratorDevice{{Name: a.Name, Manufacturer: spelled(a.Manufacturer), Count: a.Count}}}
		}
	}
	return x
}

// instanceTypeFilters are the DescribeInstanceTypes filters modelled.
var instanceTypeFilters = fieldFuncs[*typeInfo]{
	"instance-type":                         func(t *typeInfo) []string { return one(t.facts.Name) },
	"supported-virtualization-type":         func(t *typeInfo) []string { return t.xml.SupportedVirtualizationTypes.Items },
	"processor-info.supported-architecture": func(t *typeInfo) []string { return t.xml.ProcessorInfo.SupportedArchitectures.Items },
	"processor-info.manufacturer":           func(t *typeInfo) []string { return one(t.xml.ProcessorInfo.Manufacturer) },
	"supported-usage-class":                 func(t *typeInfo) []string { return t.xml.SupportedUsageClasses.Items },
	"current-generation":                    func(t *typeInfo) []string { return one(strconv.FormatBool(t.xml.CurrentGeneration)) },
	"bare-metal":                            func(t *typeInfo) []string { return one(strconv.FormatBool(t.xml.BareMetal)) },
	"hypervisor":                            func(t *typeInfo) []string { return one(t.facts.Hypervisor) },
	"instance-storage-supported":            func(t *typeInfo) []string { return one(strconv.FormatBool(t.xml.InstanceStorageSupported)) },
	"vcpu-info.default-vcpus":               func(t *typeInfo) []string { return one(itoa(t.facts.CPU)) },
	"memory-info.size-in-mib":               func(t *typeInfo) []string { return one(itoa(t.facts.MemoryMiB)) },
	"network-info.efa-supported":            func(t *typeInfo) []string { return one(strconv.FormatBool(t.xml.NetworkInfo.EfaSupported)) },
	"network-info.encryption-in-transit-supported": func(t *typeInfo) []string {
		return one(strconv.FormatBool(t.facts.EncryptionInTransit))
	},
}

// describeInstanceTypesResponse is DescribeInstanceTypes' result.
type describeInstanceTypesResponse struct {
	meta
	InstanceTypes []instanceTypeXML `xml:"instanceTypeSet>item"`
	NextToken     string            `xml:"nextToken,omitempty"`
}

// describeInstanceTypes serves DescribeInstanceTypes from the catalog.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html
func (s *Service) describeInstanceTypes(p params) (response, error) {
	names, err := p.strings("InstanceType")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, instanceTypeFilters, false)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeInstanceTypes", 5, 100)
	if err != nil {
		return nil, err
	}
	tt := types()
	found := tt.list
	if len(names) > 0 {
		found = nil
		var missing []string
		for _, n := range names {
			ti, ok := tt.byName[n]
			if !ok {
				missing = append(missing, n)
				continue
			}
			if !slices.Contains(found, ti) {
				found = append(found, ti)
			}
		}
		if len(missing) > 0 {
			return nil, apiErrorf(400, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(missing, ", "))
		}
	}
	var sel []*typeInfo
	for _, ti := range found {
		if matches(ti, fs, instanceTypeFilters, nil) {
			sel = append(sel, ti)
		}
	}
	start, end, next := s.window(pr, "DescribeInstanceTypes", len(sel))
	out := &describeInstanceTypesResponse{NextToken: next}
	for _, ti := range sel[start:end] {
		out.InstanceTypes = append(out.InstanceTypes, ti.xml)
	}
	return out, nil
}

// offeringXML is one <item> of instanceTypeOfferingSet.
type offeringXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

// describeInstanceTypeOfferingsResponse is DescribeInstanceTypeOfferings' result.
type describeInstanceTypeOfferingsResponse struct {
	meta
	Offerings []offeringXML `xml:"instanceTypeOfferingSet>item"`
	NextToken string        `xml:"nextToken,omitempty"`
}

// offeringFilters are the DescribeInstanceTypeOfferings filters.
var offeringFilters = fieldFuncs[offeringXML]{
	"location":      func(o offeringXML) []string { return one(o.Location) },
	"instance-type": func(o offeringXML) []string { return one(o.InstanceType) },
}

// describeInstanceTypeOfferings serves DescribeInstanceTypeOfferings: every
// catalog type with a price is offered in the region and in every zone
// (zonesLocked); the few without a price are offered nowhere, as in the
// catalog.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html
func (s *Service) describeInstanceTypeOfferings(p params) (response, error) {
	lt := p.get("LocationType")
	if lt == "" {
		lt = "region"
	}
	if lt != "region" && lt != "availability-zone" && lt != "availability-zone-id" {
		return nil, errInvalidValue("LocationType", lt)
	}
	fs, err := parseFilters(p, offeringFilters, false)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeInstanceTypeOfferings", 5, 1000)
	if err != nil {
		return nil, err
	}
	var locations []string
	switch lt {
	case "region":
		locations = []string{s.cfg.Region}
	default:
		for _, z := range s.zonesLocked() {
			if lt == "availability-zone" {
				locations = append(locations, z.Name)
			} else {
				locations = append(locations, z.ID)
			}
		}
	}
	var sel []offeringXML
	for _, ti := range types().list {
		if ti.facts.OnDemandPrice == nil {
			continue
		}
		for _, loc := range locations {
			o := offeringXML{InstanceType: ti.facts.Name, LocationType: lt, Location: loc}
			if matches(o, fs, offeringFilters, nil) {
				sel = append(sel, o)
			}
		}
	}
	start, end, next := s.window(pr, "DescribeInstanceTypeOfferings", len(sel))
	return &describeInstanceTypeOfferingsResponse{Offerings: sel[start:end], NextToken: next}, nil
}

// productDescription is the only spot product modelled.
const productDescription = "Linux/UNIX"

// spotPriceXML is one <item> of spotPriceHistorySet.
type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
}

// describeSpotPriceHistoryResponse is DescribeSpotPriceHistory's result.
type describeSpotPriceHistoryResponse struct {
	meta
	Prices    []spotPriceXML `xml:"spotPriceHistorySet>item"`
	NextToken string         `xml:"nextToken,omitempty"`
}

// spotFilters are the DescribeSpotPriceHistory filters.
var spotFilters = fieldFuncs[spotPriceXML]{
	"availability-zone":   func(o spotPriceXML) []string { return one(o.AvailabilityZone) },
	"instance-type":       func(o spotPriceXML) []string { return one(o.InstanceType) },
	"product-description": func(o spotPriceXML) []string { return one(o.ProductDescription) },
	"spot-price":          func(o spotPriceXML) []string { return one(o.SpotPrice) },
	"timestamp":           func(o spotPriceXML) []string { return one(o.Timestamp) },
}

// spotPriceEpoch is the timestamp of every spot price record: the prices are
// static, set "long ago" so that any StartTime sees them as in effect.
var spotPriceEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// describeSpotPriceHistory serves DescribeSpotPriceHistory with the
// catalog's derived spot prices: one Linux/UNIX record per priced type and
// zone, the price in effect at StartTime.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html
func (s *Service) describeSpotPriceHistory(p params) (response, error) {
	products, err := p.strings("ProductDescription")
	if err != nil {
		return nil, err
	}
	names, err := p.strings("InstanceType")
	if err != nil {
		return nil, err
	}
	zone := p.get("AvailabilityZone")
	if _, _, err := p.time("StartTime"); err != nil {
		return nil, err
	}
	end, hasEnd, err := p.time("EndTime")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, spotFilters, false)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeSpotPriceHistory", 1, 0)
	if err != nil {
		return nil, err
	}
	if len(products) > 0 && !slices.Contains(products, productDescription) {
		return &describeSpotPriceHistoryResponse{}, nil
	}
	if hasEnd && end.Before(spotPriceEpoch) {
		return &describeSpotPriceHistoryResponse{}, nil
	}
	var sel []spotPriceXML
	for _, ti := range types().list {
		if ti.facts.OnDemandPrice == nil || (len(names) > 0 && !slices.Contains(names, ti.facts.Name)) {
			continue
		}
		for _, z := range s.zonesLocked() {
			if zone != "" && z.Name != zone {
				continue
			}
			price, err := s.spotPriceLocked(ti.facts.Name, z.Name)
			if err != nil {
				return nil, err
			}
			rec := spotPriceXML{
				InstanceType:       ti.facts.Name,
				ProductDescription: productDescription,
				SpotPrice:          strconv.FormatFloat(price, 'f', 6, 64),
				Timestamp:          timestamp(spotPriceEpoch),
				AvailabilityZone:   z.Name,
				AvailabilityZoneID: z.ID,
			}
			if matches(rec, fs, spotFilters, nil) {
				sel = append(sel, rec)
			}
		}
	}
	if !pr.limit {
		pr.max, pr.limit = 1000, true
	}
	start, stop, next := s.window(pr, "DescribeSpotPriceHistory", len(sel))
	return &describeSpotPriceHistoryResponse{Prices: sel[start:stop], NextToken: next}, nil
}

// spotPriceLocked returns the catalog's spot price of a type in a zone,
// loading (and caching) the catalog's prices for the zone.
func (s *Service) spotPriceLocked(instanceType, zone string) (float64, error) {
	prices, ok := s.st.spotPrices[zone]
	if !ok {
		opts := catalog.DefaultOptions()
		opts.Region = s.cfg.Region
		opts.Zones = []string{zone}
		all, err := catalog.Load(opts)
		if err != nil {
			return 0, fmt.Errorf("loading catalog spot prices for %s: %w", zone, err)
		}
		prices = map[string]float64{}
		for _, it := range all {
			for _, o := range it.Offerings {
				if o.CapacityType == "spot" {
					prices[it.Name] = o.Price
				}
			}
		}
		s.st.spotPrices[zone] = prices
	}
	p, ok := prices[instanceType]
	if !ok {
		return 0, fmt.Errorf("no spot price for %s in %s", instanceType, zone)
	}
	return p, nil
}

// onDemandPrice returns the catalog's on-demand price of a type.
func onDemandPrice(instanceType string) (float64, bool) {
	ti, ok := types().byName[instanceType]
	if !ok || ti.facts.OnDemandPrice == nil {
		return 0, false
	}
	return *ti.facts.OnDemandPrice, true
}
