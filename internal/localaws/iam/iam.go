package iam

import (
	"encoding/xml"
	"fmt"
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

// apiVersion is IAM's query API version; xmlns is its response namespace.
const (
	apiVersion = "2010-05-08"
	xmlns      = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// Limits IAM documents (IAM and AWS STS quotas).
const (
	// maxTags is the tag quota per IAM resource.
	maxTags = 50
	// maxRolesPerProfile is InstanceSessionsPerInstanceProfile: an instance
	// profile holds at most one role.
	maxRolesPerProfile = 1
)

// Config configures a Service.
type Config struct {
	// Region is the region clients sign IAM requests for. IAM is global; its
	// endpoint takes us-east-1 (the default).
	Region string
	// AccountID owns every entity (default 123456789012).
	AccountID string
	// Clock stamps CreateDate (default the real clock).
	Clock clock.PassiveClock
	// Seed fixes which requests SetThrottle's rate refuses.
	Seed uint64
}

// Role is an IAM role.
type Role struct {
	// Name, Path, ID (AROA...) and ARN identify the role.
	Name, Path, ID, ARN string
	// CreateDate is when AddRole created it.
	CreateDate time.Time
}

// InstanceProfile is an IAM instance profile, as the Go API reports it.
type InstanceProfile struct {
	// Name, Path, ID (AIPA...) and ARN identify the profile.
	Name, Path, ID, ARN string
	// CreateDate is when CreateInstanceProfile created it.
	CreateDate time.Time
	// Roles are the names of the profile's roles (at most one).
	Roles []string
	// Tags are the profile's tags.
	Tags map[string]string
}

// Service is a local IAM answering the instance-profile and role operations
// Karpenter calls, on IAM's awsQuery protocol. It implements http.Handler.
type Service struct {
	region, account string
	clock           clock.PassiveClock
	throttle        *awsjson.Throttle

	mu       sync.Mutex
	seq      int
	roles    map[string]*Role    // lower-cased name -> role
	profiles map[string]*profile // lower-cased name -> profile
}

// profile is an instance profile's state; tags keep their order.
type profile struct {
	InstanceProfile
	tagKeys []string
}

// New returns a Service with no roles and no instance profiles.
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
		throttle: awsjson.NewThrottle(cfg.Seed), roles: map[string]*Role{}, profiles: map[string]*profile{}}
}

// SetThrottle makes that fraction (0 to 1) of requests fail with Throttling (HTTP 400,
// type Sender)
// right after authentication, as IAM answers requests beyond the account's
// request rate; 0 turns it off.
func (s *Service) SetThrottle(rate float64) { s.throttle.SetRate(rate) }

// AddRole creates (or replaces) the role name under path ("" means "/") and
// returns it, for tests to seed the roles nodeclasses name.
func (s *Service) AddRole(name, path string) Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	if path == "" {
		path = "/"
	}
	s.seq++
	r := &Role{Name: name, Path: path, ID: fmt.Sprintf("AROA%017X", s.seq),
		ARN: "arn:aws:iam::" + s.account + ":role" + path + name, CreateDate: s.clock.Now().UTC()}
	s.roles[strings.ToLower(name)] = r
	return *r
}

// InstanceProfiles returns every instance profile, sorted by name, for leak
// checks in tests.
func (s *Service) InstanceProfiles() []InstanceProfile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]InstanceProfile, 0, len(s.profiles))
	for _, key := range s.sortedProfiles() {
		out = append(out, s.profiles[key].snapshot())
	}
	return out
}

// snapshot copies p's exported view.
func (p *profile) snapshot() InstanceProfile {
	c := p.InstanceProfile
	c.Roles = append([]string{}, p.Roles...)
	c.Tags = make(map[string]string, len(p.Tags))
	for k, v := range p.Tags {
		c.Tags[k] = v
	}
	return c
}

// sortedProfiles returns the profile keys in name order. The caller holds s.mu.
func (s *Service) sortedProfiles() []string {
	keys := make([]string, 0, len(s.profiles))
	for k := range s.profiles {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Error is an IAM error answer.
type Error struct {
	// Status is the HTTP status IAM answers with.
	Status int
	// Code is the <Code> the SDK matches (NoSuchEntity, ...).
	Code string
	// Message is the <Message>.
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

func noSuchEntity(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: "NoSuchEntity", Message: fmt.Sprintf(format, args...)}
}

func validationError(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "ValidationError", Message: "1 validation error detected: " + fmt.Sprintf(format, args...)}
}

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f := awsjson.Authenticate(r, "iam", s.region); f != nil {
		writeError(w, &Error{Status: http.StatusForbidden, Code: f.Code, Message: f.Message})
		return
	}
	if s.throttle.Throttled() {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "Throttling", Message: awsjson.ThrottleMessage})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "MalformedQueryString", Message: err.Error()})
		return
	}
	action := r.Form.Get("Action")
	if v := r.Form.Get("Version"); action != "" && v != apiVersion {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "InvalidAction", Message: fmt.Sprintf("Could not find operation %s for version %s", action, v)})
		return
	}
	handler, ok := map[string]func(form) (any, *Error){
		"GetInstanceProfile":            s.getInstanceProfile,
		"CreateInstanceProfile":         s.createInstanceProfile,
		"TagInstanceProfile":            s.tagInstanceProfile,
		"AddRoleToInstanceProfile":      s.addRoleToInstanceProfile,
		"RemoveRoleFromInstanceProfile": s.removeRoleFromInstanceProfile,
		"DeleteInstanceProfile":         s.deleteInstanceProfile,
		"ListInstanceProfiles":          s.listInstanceProfiles,
		"GetRole":                       s.getRole,
	}[action]
	if !ok {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "InvalidAction", Message: fmt.Sprintf("Could not find operation %s for version %s", action, apiVersion)})
		return
	}
	s.mu.Lock()
	result, e := handler(form(r.Form))
	s.mu.Unlock()
	if e != nil {
		writeError(w, e)
		return
	}
	writeResult(w, action, result)
}

// form reads awsQuery parameters.
type form map[string][]string

func (f form) get(key string) (string, bool) {
	v, ok := f[key]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// tags reads the Tags.member.N.Key/Value list.
func (f form) tags() ([][2]string, *Error) {
	var out [][2]string
	for i := 1; ; i++ {
		prefix := "Tags.member." + strconv.Itoa(i) + "."
		key, hasKey := f.get(prefix + "Key")
		value, hasValue := f.get(prefix + "Value")
		if !hasKey && !hasValue {
			return out, nil
		}
		if !hasKey {
			return nil, validationError("Value null at 'tags.%d.member.key' failed to satisfy constraint: Member must not be null", i)
		}
		if !hasValue {
			return nil, validationError("Value null at 'tags.%d.member.value' failed to satisfy constraint: Member must not be null", i)
		}
		if n := len([]rune(key)); n < 1 || n > 128 || !tagText.MatchString(key) {
			return nil, validationError("Value '%s' at 'tags.%d.member.key' failed to satisfy constraint: Member must have length between 1 and 128 and satisfy regular expression pattern: [\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]+", key, i)
		}
		if n := len([]rune(value)); n > 256 || (value != "" && !tagText.MatchString(value)) {
			return nil, validationError("Value '%s' at 'tags.%d.member.value' failed to satisfy constraint: Member must have length less than or equal to 256 and satisfy regular expression pattern: [\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*", value, i)
		}
		out = append(out, [2]string{key, value})
	}
}

// IAM's documented name, path and tag patterns.
var (
	entityName = regexp.MustCompile(`^[\w+=,.@-]+$`)
	pathText   = regexp.MustCompile(`^(/|/[\x21-\x7E]+/)$`)
	tagText    = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]+$`)
)

// name reads a required entity name (1-maxLen characters of [\w+=,.@-]);
// member is the camel-case member name AWS's messages use.
func (f form) name(key, member string, maxLen int) (string, *Error) {
	v, ok := f.get(key)
	if !ok {
		return "", validationError("Value null at '%s' failed to satisfy constraint: Member must not be null", member)
	}
	if n := len(v); n < 1 || n > maxLen {
		return "", validationError("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", v, member, maxLen)
	}
	if !entityName.MatchString(v) {
		return "", validationError("Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+", v, member)
	}
	return v, nil
}

// writeResult writes <ActionResponse><ActionResult>result</ActionResult><ResponseMetadata>.
func writeResult(w http.ResponseWriter, action string, result any) {
	var inner strings.Builder
	if result != nil {
		if err := xml.NewEncoder(&inner).EncodeElement(result, xml.StartElement{Name: xml.Name{Local: action + "Result"}}); err != nil {
			writeError(w, &Error{Status: http.StatusInternalServerError, Code: "ServiceFailure", Message: err.Error()})
			return
		}
	}
	type metadata struct {
		RequestID string `xml:"RequestId"`
	}
	doc := struct {
		XMLName  xml.Name
		Xmlns    string   `xml:"xmlns,attr"`
		Result   string   `xml:",innerxml"`
		Metadata metadata `xml:"ResponseMetadata"`
	}{XMLName: xml.Name{Local: action + "Response"}, Xmlns: xmlns, Result: inner.String(), Metadata: metadata{RequestID: awsjson.RequestID()}}
	write(w, http.StatusOK, doc)
}

// writeError writes IAM's <ErrorResponse>.
func writeError(w http.ResponseWriter, e *Error) {
	typ := "Sender"
	if e.Status >= 500 {
		typ = "Receiver"
	}
	doc := struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		Xmlns   string   `xml:"xmlns,attr"`
		Error   struct {
			Type    string
			Code    string
			Message string
		}
		RequestID string `xml:"RequestId"`
	}{Xmlns: xmlns, RequestID: awsjson.RequestID()}
	doc.Error.Type, doc.Error.Code, doc.Error.Message = typ, e.Code, e.Message
	write(w, e.Status, doc)
}

func write(w http.ResponseWriter, status int, doc any) {
	body, err := xml.Marshal(doc)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`<ErrorResponse><Error><Type>Receiver</Type><Code>ServiceFailure</Code></Error></ErrorResponse>`)
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
