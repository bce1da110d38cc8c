package ssm

import (
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/awsjson"
)

// targetPrefix is the X-Amz-Target prefix of SSM's awsJson1_1 protocol.
const targetPrefix = "AmazonSSM"

// maxVersions is how many versions SSM keeps of a parameter; older ones are
// dropped as new ones are written.
const maxVersions = 100

// Config configures a Service.
type Config struct {
	// Region is the region the service answers for (default us-east-1);
	// requests signed for another region are refused.
	Region string
	// AccountID owns the parameters that are not public (default 123456789012).
	AccountID string
	// Clock stamps LastModifiedDate (default the real clock).
	Clock clock.PassiveClock
	// Seed fixes which requests SetThrottle's rate refuses.
	Seed uint64
}

// Service is a local SSM Parameter Store. It implements http.Handler.
type Service struct {
	region, account string
	clock           clock.PassiveClock
	throttle        *awsjson.Throttle

	mu     sync.Mutex
	params map[string][]version // name -> versions, oldest first
}

// version is one stored value of a parameter.
type version struct {
	number   int64
	value    string
	dataType string
	modified time.Time
}

// New returns an empty Service.
func New(cfg Config) *Service {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "123456789012"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Service{region: cfg.Region, account: cfg.AccountID, clock: cfg.Clock,
		throttle: awsjson.NewThrottle(cfg.Seed), params: map[string][]version{}}
}

// SetThrottle makes that fraction (0 to 1) of requests fail with ThrottlingException (HTTP 400)
// right after authentication, as SSM answers requests beyond the account's
// rate; 0 turns it off.
func (s *Service) SetThrottle(rate float64) { s.throttle.SetRate(rate) }

// PutParameter stores value as a new version of the String parameter name
// (version 1 when it is new, one more than the latest otherwise), as
// PutParameter with Overwrite does. The data type is "aws:ec2:image" when
// value is an AMI ID and "text" otherwise. It returns the new version.
func (s *Service) PutParameter(name, value string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	versions := s.params[name]
	next := int64(1)
	if n := len(versions); n > 0 {
		next = versions[n-1].number + 1
	}
	dataType := "text"
	if amiID.MatchString(value) {
		dataType = "aws:ec2:image"
	}
	versions = append(versions, version{number: next, value: value, dataType: dataType, modified: s.clock.Now()})
	if len(versions) > maxVersions {
		versions = versions[len(versions)-maxVersions:]
	}
	s.params[name] = versions
	return next
}

// DeleteParameter removes name and all its versions; it reports whether it existed.
func (s *Service) DeleteParameter(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.params[name]
	delete(s.params, name)
	return ok
}

// Names returns the stored parameter names, sorted.
func (s *Service) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.params))
	for name := range s.params {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

var amiID = regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`)

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	awsjson.Serve(w, r, awsjson.Protocol{Service: "ssm", Region: s.region, ContentType: awsjson.ContentType11, TargetPrefix: targetPrefix,
		Throttle: s.throttle, ThrottleError: awsjson.ThrottlingException(http.StatusBadRequest)}, map[string]awsjson.Operation{
		"GetParameter":  s.getParameter,
		"GetParameters": s.getParameters,
	})
}

// parameter is the wire shape of SSM's Parameter structure.
type parameter struct {
	ARN              string  `json:"ARN"`
	DataType         string  `json:"DataType"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
	Name             string  `json:"Name"`
	Selector         string  `json:"Selector,omitempty"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int64   `json:"Version"`
}

// getParameter answers GetParameter.
//
// https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
//
// Name may be a name, an ARN, and carry a ":<version>" selector. WithDecryption
// is accepted and has no effect (only String parameters exist). An unknown name
// is ParameterNotFound, an unknown version ParameterVersionNotFound.
func (s *Service) getParameter(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		Name           *string
		WithDecryption *bool
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.Name == nil {
		return nil, validation("Value null at 'name' failed to satisfy constraint: Member must not be null")
	}
	if n := len(*in.Name); n < 1 || n > 2048 {
		return nil, validation("Value '" + *in.Name + "' at 'name' failed to satisfy constraint: Member must have length between 1 and 2048")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, e := s.lookup(*in.Name)
	if e != nil {
		return nil, e
	}
	return map[string]any{"Parameter": p}, nil
}

// getParameters answers GetParameters.
//
// https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameters.html
//
// Names holds 1 to 10 names; unknown names (and unknown versions) are listed in
// InvalidParameters rather than failing the call.
func (s *Service) getParameters(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		Names          []string
		WithDecryption *bool
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.Names == nil {
		return nil, validation("Value null at 'names' failed to satisfy constraint: Member must not be null")
	}
	if n := len(in.Names); n < 1 || n > 10 {
		return nil, validation("Value '[" + strings.Join(in.Names, ", ") + "]' at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := []parameter{}
	invalid := []string{}
	seen := map[string]bool{}
	for _, name := range in.Names {
		if seen[name] {
			continue
		}
		seen[name] = true
		p, e := s.lookup(name)
		if e != nil {
			invalid = append(invalid, name)
			continue
		}
		found = append(found, p)
	}
	return map[string]any{"Parameters": found, "InvalidParameters": invalid}, nil
}

// lookup resolves a GetParameter name (plain, ARN, with or without a
// version selector). The caller holds s.mu.
func (s *Service) lookup(ref string) (parameter, *awsjson.Error) {
	name, isARN := ref, strings.HasPrefix(ref, "arn:")
	if isARN {
		_, rest, ok := strings.Cut(ref, ":parameter/")
		if !ok {
			return parameter{}, validation("Value '" + ref + "' at 'name' failed to satisfy constraint: Member must be a valid parameter name or ARN")
		}
		name = rest // "a/b" for /a/b, "name" for name
	}
	name, selector, hasSelector := strings.Cut(name, ":")
	if isARN && !s.exists(name) {
		name = "/" + name
	}
	versions, ok := s.params[name]
	if !ok || len(versions) == 0 {
		return parameter{}, &awsjson.Error{Status: http.StatusBadRequest, Type: "ParameterNotFound"}
	}
	v := versions[len(versions)-1]
	if hasSelector {
		n, err := strconv.ParseInt(selector, 10, 64)
		if err != nil {
			// Labels are not modelled: no parameter carries one.
			return parameter{}, &awsjson.Error{Status: http.StatusBadRequest, Type: "ParameterVersionNotFound",
				Message: "Systems Manager could not find version " + selector + " of " + name + ". Verify the version and try again."}
		}
		i := sort.Search(len(versions), func(i int) bool { return versions[i].number >= n })
		if i == len(versions) || versions[i].number != n {
			return parameter{}, &awsjson.Error{Status: http.StatusBadRequest, Type: "ParameterVersionNotFound",
				Message: "Systems Manager could not find version " + selector + " of " + name + ". Verify the version and try again."}
		}
		v = versions[i]
	}
	p := parameter{
		ARN:              s.arn(name),
		DataType:         v.dataType,
		LastModifiedDate: float64(v.modified.UnixMilli()) / 1000,
		Name:             name,
		Type:             "String",
		Value:            v.value,
		Version:          v.number,
	}
	if hasSelector {
		p.Selector = ":" + selector
	}
	return p, nil
}

func (s *Service) exists(name string) bool { _, ok := s.params[name]; return ok }

// arn is the parameter's ARN: AWS's public parameters (/aws/service/...) have
// no account; a hierarchical name keeps its leading slash as the separator.
func (s *Service) arn(name string) string {
	account := s.account
	if strings.HasPrefix(name, "/aws/service/") {
		account = ""
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return "arn:aws:ssm:" + s.region + ":" + account + ":parameter" + name
}

// validation is SSM's ValidationException in the "1 validation error
// detected" form AWS uses.
func validation(detail string) *awsjson.Error {
	return &awsjson.Error{Status: http.StatusBadRequest, Type: "ValidationException", Message: "1 validation error detected: " + detail}
}
