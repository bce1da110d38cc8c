package ec2

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// params is the form of one EC2 Query request. EC2's Query protocol flattens
// every list: a list member is addressed as Name.N (N from 1) and a nested
// field as Name.N.Field, e.g. LaunchTemplateConfigs.1.Overrides.2.InstanceType.
type params struct {
	prefix string
	v      url.Values
}

// sub returns the parameters below key, e.g. sub("LaunchTemplateData").
func (p params) sub(key string) params { return params{prefix: p.key(key) + ".", v: p.v} }

// key is the full name of a field of p.
func (p params) key(k string) string { return p.prefix + k }

// str returns the value of a field and whether it was given.
func (p params) str(k string) (string, bool) {
	vs, ok := p.v[p.key(k)]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// get returns a field's value or "".
func (p params) get(k string) string {
	s, _ := p.str(k)
	return s
}

// has tells whether any parameter lies at or below the field k.
func (p params) has(k string) bool {
	full := p.key(k)
	for name := range p.v {
		if name == full || strings.HasPrefix(name, full+".") {
			return true
		}
	}
	return false
}

// required returns a field's value or MissingParameter naming it.
func (p params) required(k string) (string, error) {
	s, ok := p.str(k)
	if !ok || s == "" {
		return "", errMissing(p.key(k))
	}
	return s, nil
}

// indices returns, sorted, the N of every k.N parameter (k.N or k.N.field).
func (p params) indices(k string) ([]int, error) {
	full := p.key(k) + "."
	seen := map[int]bool{}
	for name := range p.v {
		rest, ok := strings.CutPrefix(name, full)
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			return nil, errInvalidValue(name, num)
		}
		seen[n] = true
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// members returns the struct members of the list k, in index order.
func (p params) members(k string) ([]params, error) {
	idx, err := p.indices(k)
	if err != nil {
		return nil, err
	}
	out := make([]params, len(idx))
	for i, n := range idx {
		out[i] = p.sub(k + "." + strconv.Itoa(n))
	}
	return out, nil
}

// strings returns the scalar members of the list k, in index order.
func (p params) strings(k string) ([]string, error) {
	idx, err := p.indices(k)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(idx))
	for _, n := range idx {
		if s, ok := p.str(k + "." + strconv.Itoa(n)); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// int returns an integer field, or InvalidParameterValue naming it.
func (p params) int(k string) (int64, bool, error) {
	s, ok := p.str(k)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, true, errInvalidValue(p.key(k), s)
	}
	return n, true, nil
}

// float returns a decimal field, or InvalidParameterValue naming it.
func (p params) float(k string) (float64, bool, error) {
	s, ok := p.str(k)
	if !ok {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, true, errInvalidValue(p.key(k), s)
	}
	return f, true, nil
}

// bool returns a boolean field, or InvalidParameterValue naming it.
func (p params) bool(k string) (bool, bool, error) {
	s, ok := p.str(k)
	if !ok {
		return false, false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, true, errInvalidValue(p.key(k), s)
	}
	return b, true, nil
}

// time returns an ISO 8601 timestamp field, as the SDK serializes them.
func (p params) time(k string) (time.Time, bool, error) {
	s, ok := p.str(k)
	if !ok {
		return time.Time{}, false, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true, nil
		}
	}
	return time.Time{}, true, errInvalidValue(p.key(k), s)
}

// tag is one EC2 resource tag.
type tag struct{ Key, Value string }

// tags reads a Tag.N.Key / Tag.N.Value list.
func (p params) tags(k string) ([]tag, error) {
	ms, err := p.members(k)
	if err != nil {
		return nil, err
	}
	out := make([]tag, 0, len(ms))
	for _, m := range ms {
		key, err := m.required("Key")
		if err != nil {
			return nil, err
		}
		out = append(out, tag{Key: key, Value: m.get("Value")})
	}
	return out, nil
}

// tagSpec is one TagSpecification: tags for one resource type.
type tagSpec struct {
	ResourceType string
	Tags         []tag
}

// tagSpecs reads a TagSpecification.N list.
func (p params) tagSpecs(k string) ([]tagSpec, error) {
	ms, err := p.members(k)
	if err != nil {
		return nil, err
	}
	out := make([]tagSpec, 0, len(ms))
	for _, m := range ms {
		rt, err := m.required("ResourceType")
		if err != nil {
			return nil, err
		}
		tags, err := m.tags("Tag")
		if err != nil {
			return nil, err
		}
		if err := validateTags(tags); err != nil {
			return nil, err
		}
		out = append(out, tagSpec{ResourceType: rt, Tags: tags})
	}
	return out, nil
}

// maxTagsPerResource is EC2's limit on tags per resource.
const maxTagsPerResource = 50

// validateTags applies EC2's tag restrictions: keys of 1-128 and values of
// at most 256 characters, and no user key may start with "aws:".
func validateTags(tags []tag) error {
	if len(tags) > maxTagsPerResource {
		return apiErrorf(400, "TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
	}
	for _, t := range tags {
		if len(t.Key) == 0 || len(t.Key) > 128 {
			return apiErrorf(400, "InvalidParameterValue", "Tag key must be between 1 and 128 characters: %q", t.Key)
		}
		if len(t.Value) > 256 {
			return apiErrorf(400, "InvalidParameterValue", "Tag value for key %q exceeds 256 characters", t.Key)
		}
		if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return apiErrorf(400, "InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
	}
	return nil
}

// pageRequest is a request's MaxResults and NextToken after validation.
type pageRequest struct {
	max    int
	offset int
	limit  bool
}

// page validates MaxResults against an operation's documented [lo, hi]
// range (hi 0: no upper bound) and decodes NextToken, which must have been
// issued for the same action.
func (s *Service) page(p params, action string, lo, hi int64) (pageRequest, error) {
	var pr pageRequest
	n, ok, err := p.int("MaxResults")
	if err != nil {
		return pr, err
	}
	if ok {
		if n < lo || (hi > 0 && n > hi) {
			if hi > 0 {
				return pr, apiErrorf(400, "InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", n, lo, hi)
			}
			return pr, apiErrorf(400, "InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value greater than %d.", n, lo)
		}
		pr.max, pr.limit = int(n), true
	}
	if tok, ok := p.str("NextToken"); ok && tok != "" {
		off, err := s.decodeToken(action, tok)
		if err != nil {
			return pr, err
		}
		pr.offset = off
	}
	return pr, nil
}

// window returns the [start, end) of the page over total items and the next
// token, "" on the last page. Without MaxResults every item is returned.
func (s *Service) window(pr pageRequest, action string, total int) (int, int, string) {
	start := min(pr.offset, total)
	if !pr.limit {
		return start, total, ""
	}
	end := min(start+pr.max, total)
	if end >= total {
		return start, end, ""
	}
	return start, end, s.encodeToken(action, end)
}

// encodeToken makes an opaque token for the next page of an action.
func (s *Service) encodeToken(action string, offset int) string {
	raw := fmt.Sprintf("%s|%d|%d", action, offset, tokenCheck(s.cfg.Seed, action, offset))
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeToken checks a token made by encodeToken for action.
func (s *Service) decodeToken(action, tok string) (int, error) {
	bad := apiErrorf(400, "InvalidNextToken", "The token '%s' is invalid.", tok)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, bad
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[0] != action {
		return 0, bad
	}
	off, err := strconv.Atoi(parts[1])
	if err != nil || off < 0 {
		return 0, bad
	}
	check, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || check != tokenCheck(s.cfg.Seed, action, off) {
		return 0, bad
	}
	return off, nil
}

// tokenCheck is a checksum that makes hand-made tokens fail.
func tokenCheck(seed uint64, action string, offset int) uint64 {
	h := uint64(14695981039346656037) ^ seed
	for _, b := range []byte(fmt.Sprintf("%s/%d", action, offset)) {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return h
}
