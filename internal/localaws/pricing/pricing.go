package pricing

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/awsjson"
)

// targetPrefix is the X-Amz-Target prefix of the Price List API (awsJson1_1).
const targetPrefix = "AWSPriceListService"

// Term and rate codes AWS's price list uses for hourly on-demand prices.
const (
	onDemandTermCode = "JRTCKXETXF"
	hourlyRateCode   = "6YS6EN2CT7"
)

// Config configures a Service.
type Config struct {
	// Region is the region clients sign Price List requests for (default
	// us-east-1, where Karpenter reaches the API from most regions).
	Region string
	// PriceRegions are the regionCodes the price list covers (default
	// us-east-1). The catalog carries us-east-1 prices only; every listed
	// region gets them until SetPrice changes one.
	PriceRegions []string
	// InstanceTypes are the types priced (default catalog.Facts()); types
	// without an on-demand price are left out.
	InstanceTypes []schema.InstanceType
	// Clock dates the price list's publicationDate (default the real clock).
	Clock clock.PassiveClock
	// Seed fixes which requests SetThrottle's rate refuses.
	Seed uint64
}

// product is one instance type's on-demand Linux offer in one region.
type product struct {
	region, instanceType string
	metal                bool
	vcpu, memoryMiB      int64
	price                float64
}

// Service is a local AWS Price List Query API answering GetProducts for
// AmazonEC2 on-demand Linux compute. It implements http.Handler.
type Service struct {
	region   string
	clock    clock.PassiveClock
	throttle *awsjson.Throttle

	mu       sync.Mutex
	products map[[2]string]*product // (region, instance type) -> product
}

// New returns a Service pricing cfg.InstanceTypes in cfg.PriceRegions.
func New(cfg Config) (*Service, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if len(cfg.PriceRegions) == 0 {
		cfg.PriceRegions = []string{"us-east-1"}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.InstanceTypes == nil {
		facts, err := catalog.Facts()
		if err != nil {
			return nil, fmt.Errorf("loading the catalog: %w", err)
		}
		cfg.InstanceTypes = facts
	}
	s := &Service{region: cfg.Region, clock: cfg.Clock, throttle: awsjson.NewThrottle(cfg.Seed), products: map[[2]string]*product{}}
	for _, region := range cfg.PriceRegions {
		for _, t := range cfg.InstanceTypes {
			if t.OnDemandPrice == nil {
				continue
			}
			s.products[[2]string{region, t.Name}] = &product{region: region, instanceType: t.Name, metal: isMetal(t),
				vcpu: t.CPU, memoryMiB: t.MemoryMiB, price: *t.OnDemandPrice}
		}
	}
	return s, nil
}

// SetThrottle makes that fraction (0 to 1) of requests fail with ThrottlingException (HTTP 429, as the
// Price List model declares it)
// right after authentication, as the Price List API answers requests beyond the account's
// request rate; 0 turns it off.
func (s *Service) SetThrottle(rate float64) { s.throttle.SetRate(rate) }

// isMetal tells bare-metal types, which the price list files under tenancy
// Dedicated and productFamily "Compute Instance (bare metal)".
func isMetal(t schema.InstanceType) bool {
	return strings.Contains(t.Size, "metal")
}

// SetPrice sets the hourly USD on-demand price of instanceType in region,
// adding the product when the price list lacks it. It reports whether the
// product existed. A type SetPrice adds is priced as a virtualized type
// unless its name has a "metal" size.
func (s *Service) SetPrice(region, instanceType string, usd float64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.products[[2]string{region, instanceType}]
	if !ok {
		_, size, _ := strings.Cut(instanceType, ".")
		p = &product{region: region, instanceType: instanceType, metal: strings.Contains(size, "metal")}
		s.products[[2]string{region, instanceType}] = p
	}
	p.price = usd
	return ok
}

// DeletePrice removes instanceType's product in region; it reports whether it existed.
func (s *Service) DeletePrice(region, instanceType string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.products[[2]string{region, instanceType}]
	delete(s.products, [2]string{region, instanceType})
	return ok
}

// Price returns the hourly USD on-demand price of instanceType in region.
func (s *Service) Price(region, instanceType string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.products[[2]string{region, instanceType}]
	if !ok {
		return 0, false
	}
	return p.price, true
}

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	awsjson.Serve(w, r, awsjson.Protocol{Service: "pricing", Region: s.region, ContentType: awsjson.ContentType11, TargetPrefix: targetPrefix,
		Throttle: s.throttle, ThrottleError: awsjson.ThrottlingException(http.StatusTooManyRequests)}, map[string]awsjson.Operation{
		"GetProducts": s.getProducts,
	})
}

// offer is one row of the price list: a product with its attribute values.
type offer struct {
	sku           string
	productFamily string
	attributes    map[string]string
	price         float64
}

// capacityStatuses are the capacitystatus values EC2 on-demand usage is
// listed under, at the same rate: plain usage, and usage of an unused or an
// allocated capacity reservation.
var capacityStatuses = []string{"Used", "UnusedCapacityReservation", "AllocatedCapacityReservation"}

// offers expands the products into price-list rows, sorted by SKU. The caller
// holds s.mu.
func (s *Service) offers() []offer {
	var out []offer
	for _, p := range s.products {
		family, tenancy, usage := "Compute Instance", "Shared", "BoxUsage:"
		if p.metal {
			family, tenancy, usage = "Compute Instance (bare metal)", "Dedicated", "DedicatedUsage:"
		}
		location, prefix := regionNames[p.region][0], regionNames[p.region][1]
		if location == "" {
			location = p.region
		}
		for _, status := range capacityStatuses {
			usagetype := prefix + usage + p.instanceType
			if status != "Used" {
				usagetype = prefix + status + ":" + p.instanceType
			}
			attributes := map[string]string{
				"servicecode": "AmazonEC2", "servicename": "Amazon Elastic Compute Cloud",
				"regionCode": p.region, "location": location, "locationType": "AWS Region",
				"instanceType": p.instanceType, "tenancy": tenancy,
				"operatingSystem": "Linux", "preInstalledSw": "NA", "licenseModel": "No License required",
				"capacitystatus": status, "marketoption": "OnDemand", "operation": "RunInstances",
				"usagetype": usagetype, "processorArchitecture": "64-bit",
			}
			if p.vcpu > 0 {
				attributes["vcpu"] = strconv.FormatInt(p.vcpu, 10)
				attributes["memory"] = memoryText(p.memoryMiB)
			}
			out = append(out, offer{sku: sku(p.region, p.instanceType, tenancy, status), productFamily: family, attributes: attributes, price: p.price})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].sku < out[j].sku })
	return out
}

// regionNames maps a region code to the price list's location name and usage
// type prefix (us-east-1 has none).
var regionNames = map[string][2]string{
	"us-east-1":      {"US East (N. Virginia)", ""},
	"us-east-2":      {"US East (Ohio)", "USE2-"},
	"us-west-1":      {"US West (N. California)", "USW1-"},
	"us-west-2":      {"US West (Oregon)", "USW2-"},
	"eu-west-1":      {"EU (Ireland)", "EU-"},
	"eu-central-1":   {"EU (Frankfurt)", "EUC1-"},
	"ap-south-1":     {"Asia Pacific (Mumbai)", "APS3-"},
	"ap-northeast-1": {"Asia Pacific (Tokyo)", "APN1-"},
	"ap-southeast-1": {"Asia Pacific (Singapore)", "APS1-"},
	"ap-southeast-2": {"Asia Pacific (Sydney)", "APS2-"},
}

// memoryText renders MiB as the price list does: "8 GiB", "0.5 GiB", "1,952 GiB".
func memoryText(mib int64) string {
	gib := strconv.FormatFloat(float64(mib)/1024, 'f', -1, 64)
	whole, frac, _ := strings.Cut(gib, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String() + " GiB"
}

// sku derives a stable 16-character SKU in AWS's alphabet.
func sku(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p + "\x00"))
	}
	n := h.Sum64()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]byte, 16)
	for i := range out {
		out[i] = alphabet[n%uint64(len(alphabet))]
		n = n/uint64(len(alphabet)) ^ uint64(i+1)*0x9E3779B97F4A7C15
	}
	return string(out)
}
