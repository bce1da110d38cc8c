package ec2

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/sigv4"
)

// APIVersion is the EC2 Query API version the service speaks (the SDK sends
// Version=2016-11-15) and the namespace of its XML responses.
const APIVersion = "2016-11-15"

// xmlns is the namespace of every EC2 response document.
const xmlns = "http://ec2.amazonaws.com/doc/" + APIVersion + "/"

// Defaults of Config.
const (
	DefaultRegion              = "us-east-1"
	DefaultAccountID           = "123456789012"
	DefaultPendingDelay        = 5 * time.Second
	DefaultStoppingDelay       = 5 * time.Second
	DefaultShuttingDownDelay   = 5 * time.Second
	DefaultTerminatedRetention = time.Hour
	DefaultTickInterval        = time.Second
)

// Config configures a Service. The zero value is valid: every field has a
// default.
type Config struct {
	// Region is the region the service answers for; requests signed for
	// another region fail with AuthFailure. Default us-east-1.
	Region string
	// AccountID owns every resource the service creates. Default 123456789012.
	AccountID string
	// Clock is the only source of time. Default the real clock.
	Clock clock.WithTicker
	// Seed makes ids, request ids and throttling decisions deterministic.
	Seed uint64
	// Zones are the availability zones instance types are offered in, in
	// addition to the zones of added subnets. Default <Region>a, b and c,
	// with zone ids derived as EC2 names them (us-east-1a -> use1-az1).
	Zones []Zone
	// PendingDelay is how long a launched instance stays pending before it
	// is running. Default 5s.
	PendingDelay time.Duration
	// StoppingDelay is how long an instance stays stopping before it is
	// stopped. Default 5s.
	StoppingDelay time.Duration
	// ShuttingDownDelay is how long an instance stays shutting-down before
	// it is terminated. Default 5s.
	ShuttingDownDelay time.Duration
	// TerminatedRetention is how long a terminated instance is still
	// described before it vanishes. Default 1h, as EC2 documents.
	TerminatedRetention time.Duration
	// TickInterval is how often Run advances instance lifecycles. Default 1s.
	TickInterval time.Duration
}

// Zone is one availability zone.
type Zone struct {
	// Name is the zone name, e.g. us-east-1a.
	Name string
	// ID is the zone id, e.g. use1-az1.
	ID string
}

// Service is an in-memory EC2 endpoint. It implements http.Handler for EC2
// Query requests and offers a Go API to seed the account, observe instances
// and inject faults. It is safe for concurrent use: one mutex guards all
// state.
type Service struct {
	cfg Config
	clk clock.WithTicker

	mu sync.Mutex
	st state
}

// state is everything the mutex guards.
type state struct {
	ids      *rand.Rand
	throttle *rand.Rand

	vpcs    []*VPC
	subnets []*subnet
	groups  []*SecurityGroup
	images  []*Image
	lts     []*launchTemplate
	insts   []*instance
	byID    map[string]*instance

	spotPrices map[string]map[string]float64

	ice          map[offeringKey]bool
	fleetErrors  map[offeringKey]string // error code CreateFleet reports
	reservations []*CapacityReservation
	// fleetTokens holds, per CreateFleet ClientToken, the request it came
	// with and the answer it got, so that a retry gets the same answer.
	fleetTokens  map[string]fleetToken
	throttleRate float64
	describeLag  time.Duration

	listeners    []listener
	nextListener int
	events       []Instance
	draining     bool
}

// New returns a Service with cfg's defaults filled in.
func New(cfg Config) *Service {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.AccountID == "" {
		cfg.AccountID = DefaultAccountID
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if len(cfg.Zones) == 0 {
		for _, l := range []string{"a", "b", "c"} {
			cfg.Zones = append(cfg.Zones, Zone{Name: cfg.Region + l})
		}
	}
	zones := make([]Zone, len(cfg.Zones))
	for i, z := range cfg.Zones {
		if z.ID == "" {
			z.ID = zoneID(cfg.Region, z.Name)
		}
		zones[i] = z
	}
	cfg.Zones = zones
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{
		{&cfg.PendingDelay, DefaultPendingDelay},
		{&cfg.StoppingDelay, DefaultStoppingDelay},
		{&cfg.ShuttingDownDelay, DefaultShuttingDownDelay},
		{&cfg.TerminatedRetention, DefaultTerminatedRetention},
		{&cfg.TickInterval, DefaultTickInterval},
	} {
		if *d.p <= 0 {
			*d.p = d.v
		}
	}
	return &Service{
		cfg: cfg,
		clk: cfg.Clock,
		st: state{
			ids:         rand.New(rand.NewPCG(cfg.Seed, 0x1d5)),
			throttle:    rand.New(rand.NewPCG(cfg.Seed, 0x7e1)),
			byID:        map[string]*instance{},
			spotPrices:  map[string]map[string]float64{},
			ice:         map[offeringKey]bool{},
			fleetErrors: map[offeringKey]string{},
			fleetTokens: map[string]fleetToken{},
		},
	}
}

// zoneID derives EC2's zone id from a zone name: the region's initials and
// number, "-az" and the zone letter's position (us-east-1a -> use1-az1).
func zoneID(region, zone string) string {
	parts := strings.Split(region, "-")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i == 0 || i == len(parts)-1:
			b.WriteString(p)
		case p != "":
			b.WriteByte(p[0])
		}
	}
	suffix := strings.TrimPrefix(zone, region)
	n := 1
	if suffix != "" {
		n = int(suffix[len(suffix)-1]-'a') + 1
	}
	return fmt.Sprintf("%s-az%d", b.String(), n)
}

// Region returns the region the service answers for.
func (s *Service) Region() string { return s.cfg.Region }

// AccountID returns the account that owns the service's resources.
func (s *Service) AccountID() string { return s.cfg.AccountID }

// Run advances instance lifecycles every Config.TickInterval, by the clock,
// until ctx ends. Without Run, lifecycles advance on every request and on
// Advance.
func (s *Service) Run(ctx context.Context) {
	t := s.clk.NewTicker(s.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			s.Advance()
		}
	}
}

// Advance moves every instance whose delay has passed to its next state
// (pending -> running, stopping -> stopped, shutting-down -> terminated,
// terminated -> gone) and notifies the OnInstanceChange listeners.
func (s *Service) Advance() {
	s.mu.Lock()
	s.advanceLocked()
	s.mu.Unlock()
	s.notify()
}

// handler serves one action with the state locked.
type handler func(s *Service, p params) (response, error)

// response is an action's result document; the service stamps the request id.
type response interface{ setRequestID(string) }

// meta carries the requestId every EC2 response starts with.
type meta struct {
	RequestID string `xml:"requestId"`
}

// setRequestID implements response.
func (m *meta) setRequestID(id string) { m.RequestID = id }

// handlers maps every supported Action to its handler.
var handlers = map[string]handler{
	"DescribeSubnets":               (*Service).describeSubnets,
	"DescribeSecurityGroups":        (*Service).describeSecurityGroups,
	"DescribeImages":                (*Service).describeImages,
	"DescribeInstanceTypes":         (*Service).describeInstanceTypes,
	"DescribeInstanceTypeOfferings": (*Service).describeInstanceTypeOfferings,
	"DescribeSpotPriceHistory":      (*Service).describeSpotPriceHistory,
	"CreateLaunchTemplate":          (*Service).createLaunchTemplate,
	"DescribeLaunchTemplates":       (*Service).describeLaunchTemplates,
	"DeleteLaunchTemplate":          (*Service).deleteLaunchTemplate,
	"CreateFleet":                   (*Service).createFleet,
	"DescribeInstances":             (*Service).describeInstances,
	"TerminateInstances":            (*Service).terminateInstances,
	"CreateTags":                    (*Service).createTags,
	"DescribeCapacityReservations":  (*Service).describeCapacityReservations,
}

// ServeHTTP answers one EC2 Query request: authentication (a SigV4
// credential scope for service ec2 in the service's region), throttling,
// the action, and the XML response or error document.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	reqID := s.requestIDLocked()
	s.mu.Unlock()
	resp, err := s.serve(r)
	if err != nil {
		writeError(w, reqID, err)
		return
	}
	resp.setRequestID(reqID)
	action := r.Form.Get("Action")
	writeResponse(w, action+"Response", resp)
}

// serve authenticates, parses and dispatches a request.
func (s *Service) serve(r *http.Request) (response, error) {
	if err := s.authenticate(r); err != nil {
		return nil, err
	}
	if err := r.ParseForm(); err != nil {
		return nil, apiErrorf(400, "MalformedQueryString", "parsing the request form: %v", err)
	}
	action := r.Form.Get("Action")
	if action == "" {
		return nil, apiErrorf(400, "MissingAction", "The request must contain the parameter Action")
	}
	h, ok := handlers[action]
	if !ok {
		return nil, apiErrorf(400, "InvalidAction", "The action %s is not valid for this web service.", action)
	}
	p := params{v: r.Form}
	s.mu.Lock()
	s.advanceLocked()
	if s.st.throttleRate > 0 && s.st.throttle.Float64() < s.st.throttleRate {
		s.mu.Unlock()
		return nil, apiErrorf(503, "RequestLimitExceeded", "Request limit exceeded.")
	}
	resp, err := s.dispatchLocked(action, h, p)
	s.mu.Unlock()
	s.notify()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	return resp, nil
}

// dispatchLocked runs a handler, answering DryRun requests with
// DryRunOperation once the request has been validated far enough to parse.
func (s *Service) dispatchLocked(action string, h handler, p params) (response, error) {
	dry, _, err := p.bool("DryRun")
	if err != nil {
		return nil, err
	}
	if dry {
		return nil, apiErrorf(412, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	return h(s, p)
}

// authenticate refuses requests without a SigV4 Authorization for ec2 in
// the service's region, as EC2 does. Signatures are not verified.
func (s *Service) authenticate(r *http.Request) error {
	cred, err := sigv4.Parse(r)
	switch {
	case errors.Is(err, sigv4.ErrMissing):
		return apiErrorf(403, "MissingAuthenticationToken", "The request must contain either a valid (registered) AWS access key ID or X.509 certificate.")
	case err != nil:
		return apiErrorf(400, "IncompleteSignature", "%v", err)
	case cred.Service != "ec2":
		return apiErrorf(401, "AuthFailure", "Credential should be scoped to correct service: 'ec2'.")
	case cred.Region != s.cfg.Region:
		return apiErrorf(401, "AuthFailure", "Credential should be scoped to a valid region, not '%s'.", cred.Region)
	}
	return nil
}

// requestIDLocked returns a new request id in EC2's UUID form.
func (s *Service) requestIDLocked() string {
	return s.uuidLocked()
}

// uuidLocked returns a random version-4 UUID from the seeded source.
func (s *Service) uuidLocked() string {
	a, b := s.st.ids.Uint64(), s.st.ids.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff, 0x8000|(b>>48)&0x3fff, b&0xffffffffffff)
}

// newIDLocked returns a new resource id: prefix, "-" and 17 hex digits
// (8 for sir- spot request ids).
func (s *Service) newIDLocked(prefix string) string {
	digits := 17
	if prefix == "sir" {
		digits = 8
	}
	v := s.st.ids.Uint64()
	return fmt.Sprintf("%s-%0*x", prefix, digits, v&(1<<(4*digits)-1))
}

// now is the clock's current time in UTC.
func (s *Service) now() time.Time { return s.clk.Now().UTC() }

// apiError is an EC2 error response.
type apiError struct {
	status  int
	code    string
	message string
}

// Error implements error.
func (e *apiError) Error() string { return e.code + ": " + e.message }

// apiErrorf makes an apiError.
func apiErrorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// errMissing is EC2's answer to a missing required parameter.
func errMissing(name string) *apiError {
	return apiErrorf(400, "MissingParameter", "The request must contain the parameter %s", name)
}

// errInvalidValue is EC2's answer to a malformed parameter value.
func errInvalidValue(name, value string) *apiError {
	return apiErrorf(400, "InvalidParameterValue", "Value (%s) for parameter %s is invalid.", value, name)
}

// errorDoc is EC2's error document.
type errorDoc struct {
	XMLName   xml.Name `xml:"Response"`
	Code      string   `xml:"Errors>Error>Code"`
	Message   string   `xml:"Errors>Error>Message"`
	RequestID string   `xml:"RequestID"`
}

// writeError writes err as EC2's error document; errors that are not
// apiErrors are InternalError (500).
func writeError(w http.ResponseWriter, reqID string, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = apiErrorf(500, "InternalError", "%v", err)
	}
	body, merr := xml.Marshal(errorDoc{Code: ae.code, Message: ae.message, RequestID: reqID})
	if merr != nil {
		http.Error(w, merr.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(ae.status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

// writeResponse writes resp as the <name xmlns=...> document.
func writeResponse(w http.ResponseWriter, name string, resp response) {
	start := xml.StartElement{Name: xml.Name{Local: name}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: xmlns}}}
	var b strings.Builder
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	if err := enc.EncodeElement(resp, start); err != nil {
		writeError(w, "", fmt.Errorf("encoding %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
}
