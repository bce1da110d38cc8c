package ec2

import (
	"maps"
	"strconv"
	"time"
)

// The XML element types shared by several responses. Lists are <item>
// elements under the lowerCamel list name the SDK's deserializers expect.

// xmlTag is one <item><key/><value/></item> of a tagSet.
type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

// tagSet is a <tagSet>.
type tagSet struct {
	Items []xmlTag `xml:"item"`
}

// toTagSet renders tags sorted by key; nil (omitted) when there are none.
func toTagSet(tags map[string]string) *tagSet {
	if len(tags) == 0 {
		return nil
	}
	out := &tagSet{}
	for _, k := range sortedKeys(tags) {
		out.Items = append(out.Items, xmlTag{Key: k, Value: tags[k]})
	}
	return out
}

// items is a list of strings as <item> elements.
type items struct {
	Items []string `xml:"item"`
}

// groupRef is a security group reference in instance descriptions.
type groupRef struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

// groupSet is a <groupSet>.
type groupSet struct {
	Items []groupRef `xml:"item"`
}

// timestamp renders a time as EC2 does (ISO 8601, milliseconds, UTC).
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// itoa formats an int64.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// cloneTags copies a tag map; nil stays nil.
func cloneTags(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

// tagMap turns a tag list into a map, later keys winning.
func tagMap(tags []tag) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[t.Key] = t.Value
	}
	return out
}
