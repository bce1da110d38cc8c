// Package selector holds what the EC2NodeClass's selector terms share,
// whatever they select: the EC2 filters of a term's tags, the union of one
// paginated Describe call per term, and a cache of the answer keyed by the
// terms. The subnet, security-group and AMI providers build on it.
package selector

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
)

// TagFilters turns a selector term's tags into EC2 filters, sorted by key:
// the value "*" matches any value of the key (tag-key), any other value
// matches exactly (tag:<key>).
func TagFilters(tags map[string]string) []ec2types.Filter {
	filters := make([]ec2types.Filter, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			filters = append(filters, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return filters
}

// Union calls describe once per filter set (the terms are ORed) and returns
// the union of the answers, one per ID, sorted by ID.
func Union[T any](ctx context.Context, filterSets [][]ec2types.Filter, describe func(context.Context, []ec2types.Filter) ([]T, error), id func(T) string) ([]T, error) {
	byID := map[string]T{}
	for _, filters := range filterSets {
		items, err := describe(ctx, filters)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			byID[id(item)] = item
		}
	}
	out := make([]T, 0, len(byID))
	for _, k := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[k])
	}
	return out, nil
}

// Cache keeps the answer of each set of selector terms for a TTL. It is
// safe for concurrent use.
type Cache[T any] struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	entries map[string]entry[T]
}

type entry[T any] struct {
	value   []T
	expires time.Time
}

// NewCache returns a cache whose answers live for ttl by clk.
func NewCache[T any](clk clock.PassiveClock, ttl time.Duration) *Cache[T] {
	return &Cache[T]{clock: clk, ttl: ttl, entries: map[string]entry[T]{}}
}

// Get returns the cached answer for terms, or calls fetch and caches what it
// returns (errors are not cached). The result is the caller's to keep.
func (c *Cache[T]) Get(terms any, fetch func() ([]T, error)) ([]T, error) {
	b, err := json.Marshal(terms)
	if err != nil {
		return nil, fmt.Errorf("encoding selector terms: %w", err)
	}
	key := string(b)
	now := c.clock.Now()
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && now.Before(e.expires) {
		c.mu.Unlock()
		return slices.Clone(e.value), nil
	}
	c.mu.Unlock()
	value, err := fetch()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	c.entries[key] = entry[T]{value: value, expires: now.Add(c.ttl)}
	return slices.Clone(value), nil
}
