package ec2

import (
	"sort"
	"strings"
)

// filter is one Filter.N of a Describe request: the values are ORed,
// filters are ANDed.
type filter struct {
	name   string
	values []string
}

// fieldFuncs gives, per filter name, the values of an object the filter
// compares against. Tag filters (tag:KEY, tag-key, tag-value) are handled
// separately for objects that have tags.
type fieldFuncs[T any] map[string]func(T) []string

// parseFilters reads Filter.N.Name / Filter.N.Value.M and rejects names the
// operation does not know, as EC2 does with InvalidParameterValue.
func parseFilters[T any](p params, fields fieldFuncs[T], tagged bool) ([]filter, error) {
	ms, err := p.members("Filter")
	if err != nil {
		return nil, err
	}
	out := make([]filter, 0, len(ms))
	for _, m := range ms {
		name, err := m.required("Name")
		if err != nil {
			return nil, err
		}
		values, err := m.strings("Value")
		if err != nil {
			return nil, err
		}
		_, known := fields[name]
		if tagged && (name == "tag-key" || name == "tag-value" || (strings.HasPrefix(name, "tag:") && len(name) > 4)) {
			known = true
		}
		if !known {
			return nil, apiErrorf(400, "InvalidParameterValue", "The filter '%s' is invalid", name)
		}
		out = append(out, filter{name: name, values: values})
	}
	return out, nil
}

// matches tells whether obj passes every filter. tags may be nil for
// untagged objects.
func matches[T any](obj T, fs []filter, fields fieldFuncs[T], tags map[string]string) bool {
	for _, f := range fs {
		var have []string
		switch {
		case f.name == "tag-key":
			have = sortedKeys(tags)
		case f.name == "tag-value":
			for _, k := range sortedKeys(tags) {
				have = append(have, tags[k])
			}
		case strings.HasPrefix(f.name, "tag:") && fields[f.name] == nil:
			v, ok := tags[strings.TrimPrefix(f.name, "tag:")]
			if !ok {
				return false
			}
			have = []string{v}
		default:
			have = fields[f.name](obj)
		}
		if !anyMatch(f.values, have) {
			return false
		}
	}
	return true
}

// anyMatch tells whether any pattern matches any value.
func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcard(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcard matches s against an EC2 filter pattern: * matches any run of
// characters, ? any one character, and a backslash escapes the next one.
// Matching is case-sensitive, as EC2's is.
func wildcard(pattern, s string) bool {
	p, str := []rune(pattern), []rune(s)
	// star is the pattern position after the last *, and mark the string
	// position it was tried at.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(str) {
		if pi < len(p) {
			switch {
			case p[pi] == '*':
				star, mark = pi+1, si
				pi++
				continue
			case p[pi] == '?':
				pi++
				si++
				continue
			case p[pi] == '\\' && pi+1 < len(p) && p[pi+1] == str[si]:
				pi += 2
				si++
				continue
			case p[pi] != '\\' && p[pi] == str[si]:
				pi++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		mark++
		pi, si = star, mark
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// one wraps a single value for a fieldFuncs entry.
func one(s string) []string { return []string{s} }
