package pricing

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/awsjson"
)

// maxResults is GetProducts' page-size limit (and default).
const maxResults = 100

// filter is one GetProducts filter.
type filter struct {
	Type  string
	Field string
	Value string
}

// getProductsInput is GetProducts' request.
type getProductsInput struct {
	ServiceCode   *string
	Filters       []filter
	FormatVersion *string
	NextToken     *string
	MaxResults    *int
}

// getProducts answers GetProducts.
//
// https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html
//
// ServiceCode must be AmazonEC2 (another service code is NotFoundException);
// FormatVersion, when given, aws_v1. Filters select on the product's
// attributes (field names compared case-insensitively, as "serviceCode" finds
// the "servicecode" attribute) plus productFamily and sku: TERM_MATCH and
// EQUALS match the value exactly, CONTAINS as a substring, ANY_OF / NONE_OF a
// comma-separated list. MaxResults is 1-100 (default 100); NextToken is
// tied to the filters it was issued for (InvalidNextTokenException otherwise).
func (s *Service) getProducts(r *http.Request) (any, *awsjson.Error) {
	var in getProductsInput
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.ServiceCode == nil {
		return nil, validation("Value null at 'serviceCode' failed to satisfy constraint: Member must not be null")
	}
	if *in.ServiceCode != "AmazonEC2" {
		return nil, &awsjson.Error{Status: http.StatusBadRequest, Type: "NotFoundException", Message: "Service code " + *in.ServiceCode + " not found"}
	}
	if in.FormatVersion != nil && *in.FormatVersion != "aws_v1" {
		return nil, &awsjson.Error{Status: http.StatusBadRequest, Type: "InvalidParameterException", Message: "Invalid FormatVersion: " + *in.FormatVersion}
	}
	limit := maxResults
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > maxResults {
			return nil, validation(fmt.Sprintf("Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value between 1 and %d", *in.MaxResults, maxResults))
		}
		limit = *in.MaxResults
	}
	for i, f := range in.Filters {
		switch f.Type {
		case "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF":
		default:
			return nil, validation(fmt.Sprintf("Value '%s' at 'filters.%d.member.type' failed to satisfy constraint: Member must satisfy enum value set: [TERM_MATCH, EQUALS, CONTAINS, ANY_OF, NONE_OF]", f.Type, i+1))
		}
		if f.Field == "" || len(f.Field) > 1024 || len(f.Value) > 1024 {
			return nil, validation(fmt.Sprintf("Value at 'filters.%d.member' failed to satisfy constraint: Field and Value must have length between 1 and 1024", i+1))
		}
	}
	query := queryKey(in.Filters)
	offset := 0
	if in.NextToken != nil {
		n, ok := parseToken(*in.NextToken, query)
		if !ok {
			return nil, &awsjson.Error{Status: http.StatusBadRequest, Type: "InvalidNextTokenException", Message: "The NextToken is invalid"}
		}
		offset = n
	}

	s.mu.Lock()
	all := s.offers()
	published := s.clock.Now().UTC().Format("2006-01-02T15:04:05Z")
	s.mu.Unlock()

	var matched []offer
	for _, o := range all {
		if matches(o, in.Filters) {
			matched = append(matched, o)
		}
	}
	out := struct {
		FormatVersion string
		PriceList     []string
		NextToken     *string `json:",omitempty"`
	}{FormatVersion: "aws_v1", PriceList: []string{}}
	if offset > len(matched) {
		offset = len(matched)
	}
	end := min(offset+limit, len(matched))
	for _, o := range matched[offset:end] {
		doc, err := priceListItem(o, published)
		if err != nil {
			return nil, &awsjson.Error{Status: http.StatusInternalServerError, Type: "InternalErrorException", Message: err.Error()}
		}
		out.PriceList = append(out.PriceList, doc)
	}
	if end < len(matched) {
		token := makeToken(end, query)
		out.NextToken = &token
	}
	return out, nil
}

// matches applies every filter to o.
func matches(o offer, filters []filter) bool {
	for _, f := range filters {
		value, ok := field(o, f.Field)
		if !ok {
			if f.Type == "NONE_OF" {
				continue
			}
			return false
		}
		var hit bool
		switch f.Type {
		case "TERM_MATCH", "EQUALS":
			hit = value == f.Value
		case "CONTAINS":
			hit = strings.Contains(value, f.Value)
		case "ANY_OF", "NONE_OF":
			for _, v := range strings.Split(f.Value, ",") {
				hit = hit || strings.TrimSpace(v) == value
			}
			if f.Type == "NONE_OF" {
				hit = !hit
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// field looks a filter field up on o, ignoring case.
func field(o offer, name string) (string, bool) {
	switch strings.ToLower(name) {
	case "productfamily":
		return o.productFamily, true
	case "sku":
		return o.sku, true
	}
	for k, v := range o.attributes {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// priceListItem renders o as one PriceList JSON document of format aws_v1.
func priceListItem(o offer, published string) (string, error) {
	price := strconv.FormatFloat(o.price, 'f', 10, 64)
	term := o.sku + "." + onDemandTermCode
	rate := term + "." + hourlyRateCode
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": o.productFamily,
			"attributes":    o.attributes,
			"sku":           o.sku,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				term: map[string]any{
					"priceDimensions": map[string]any{
						rate: map[string]any{
							"unit":         "Hrs",
							"endRange":     "Inf",
							"description":  fmt.Sprintf("$%s per On Demand %s %s Instance Hour", strconv.FormatFloat(o.price, 'f', -1, 64), o.attributes["operatingSystem"], o.attributes["instanceType"]),
							"appliesTo":    []string{},
							"rateCode":     rate,
							"beginRange":   "0",
							"pricePerUnit": map[string]string{"USD": price},
						},
					},
					"sku":            o.sku,
					"effectiveDate":  published,
					"offerTermCode":  onDemandTermCode,
					"termAttributes": map[string]string{},
				},
			},
		},
		"version":         "local",
		"publicationDate": published,
	}
	b, err := json.Marshal(doc)
	return string(b), err
}

// queryKey fingerprints the filters a NextToken belongs to.
func queryKey(filters []filter) uint32 {
	h := fnv.New32a()
	for _, f := range filters {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", f.Type, strings.ToLower(f.Field), f.Value)
	}
	return h.Sum32()
}

func makeToken(offset int, query uint32) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%d:%08x", offset, query)))
}

func parseToken(token string, query uint32) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, false
	}
	off, q, ok := strings.Cut(string(b), ":")
	n, err := strconv.Atoi(off)
	if !ok || err != nil || n < 0 || q != fmt.Sprintf("%08x", query) {
		return 0, false
	}
	return n, true
}

// validation is the coral ValidationException for a member constraint.
func validation(detail string) *awsjson.Error {
	return &awsjson.Error{Status: http.StatusBadRequest, Type: "ValidationException", Message: "1 validation error detected: " + detail}
}
