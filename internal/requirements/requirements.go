package requirements

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Requirements is a conjunction of requirements over distinct keys, kept
// sorted by key so that iteration, rendering and comparison are deterministic.
// A key without a requirement is unconstrained. The zero value is the empty
// conjunction, which every node satisfies.
type Requirements struct {
	reqs []Requirement
}

// NewRequirements returns the conjunction of the given requirements;
// requirements on the same key are intersected.
func NewRequirements(rs ...Requirement) Requirements {
	if len(rs) == 0 {
		return Requirements{}
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Requirement) int { return strings.Compare(a.key, b.key) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && merged[n-1].key == r.key {
			merged[n-1] = merged[n-1].Intersect(r)
			continue
		}
		merged = append(merged, r)
	}
	return Requirements{reqs: merged}
}

// Len returns the number of constrained keys.
func (r Requirements) Len() int { return len(r.reqs) }

// List returns the requirements sorted by key. The slice is a copy.
func (r Requirements) List() []Requirement { return slices.Clone(r.reqs) }

// Keys returns the constrained keys, sorted.
func (r Requirements) Keys() []string {
	keys := make([]string, len(r.reqs))
	for i := range r.reqs {
		keys[i] = r.reqs[i].key
	}
	return keys
}

// Get returns the requirement on key, if there is one.
func (r Requirements) Get(key string) (Requirement, bool) {
	i, ok := r.index(key)
	if !ok {
		return Requirement{}, false
	}
	return r.reqs[i], true
}

// Has reports whether key is constrained.
func (r Requirements) Has(key string) bool {
	_, ok := r.index(key)
	return ok
}

func (r Requirements) index(key string) (int, bool) {
	return slices.BinarySearchFunc(r.reqs, key, func(req Requirement, k string) int { return strings.Compare(req.key, k) })
}

// Add returns r with the given requirements intersected in.
func (r Requirements) Add(rs ...Requirement) Requirements {
	return r.Intersect(NewRequirements(rs...))
}

// Intersect returns the conjunction of r and o.
func (r Requirements) Intersect(o Requirements) Requirements {
	if len(o.reqs) == 0 {
		return r
	}
	if len(r.reqs) == 0 {
		return o
	}
	out := make([]Requirement, 0, len(r.reqs)+len(o.reqs))
	i, j := 0, 0
	for i < len(r.reqs) && j < len(o.reqs) {
		a, b := r.reqs[i], o.reqs[j]
		switch {
		case a.key < b.key:
			out = append(out, a)
			i++
		case a.key > b.key:
			out = append(out, b)
			j++
		default:
			out = append(out, a.Intersect(b))
			i++
			j++
		}
	}
	out = append(out, r.reqs[i:]...)
	out = append(out, o.reqs[j:]...)
	return Requirements{reqs: out}
}

// Without returns r without the requirements on the given keys.
func (r Requirements) Without(keys ...string) Requirements {
	out := make([]Requirement, 0, len(r.reqs))
	for _, req := range r.reqs {
		if !slices.Contains(keys, req.key) {
			out = append(out, req)
		}
	}
	return Requirements{reqs: out}
}

// Equal reports whether both conjunctions have identical requirements.
func (r Requirements) Equal(o Requirements) bool {
	return slices.EqualFunc(r.reqs, o.reqs, Requirement.Equal)
}

// Satisfiable returns an error naming the first key (in key order) that no
// node can satisfy, or nil.
func (r Requirements) Satisfiable() error {
	for _, req := range r.reqs {
		if !req.Satisfiable() {
			return fmt.Errorf("no value satisfies %s", req)
		}
	}
	return nil
}

// Intersects returns an error for every key constrained by both r and o whose
// requirements no node satisfies together. Keys constrained by only one side
// never conflict. It is symmetric: r.Intersects(o) fails exactly when
// o.Intersects(r) does.
func (r Requirements) Intersects(o Requirements) error {
	var errs []error
	i, j := 0, 0
	for i < len(r.reqs) && j < len(o.reqs) {
		a, b := r.reqs[i], o.reqs[j]
		switch {
		case a.key < b.key:
			i++
		case a.key > b.key:
			j++
		default:
			if !a.Intersect(b).Satisfiable() {
				errs = append(errs, fmt.Errorf("%s conflicts with %s", a, b))
			}
			i++
			j++
		}
	}
	return errors.Join(errs...)
}

// CompatibilityOptions tune Compatible.
type CompatibilityOptions struct {
	// AllowUndefined reports keys that r may leave undefined and still
	// satisfy any requirement on them, because the node will get a value
	// later (well-known labels set by the cloud provider). Nil allows none.
	AllowUndefined func(key string) bool
}

// Compatible reports whether a node described by r (a NodePool's or a
// NodeClaim's requirements) can satisfy the requirements of a pod: every key
// both constrain must intersect, and a key the pod constrains but r does not
// is only acceptable if a node without the label satisfies the pod (NotIn,
// DoesNotExist) or opts allow the key to be undefined.
func (r Requirements) Compatible(pod Requirements, opts CompatibilityOptions) error {
	var errs []error
	for _, req := range pod.reqs {
		if r.Has(req.key) || req.absent {
			continue
		}
		if opts.AllowUndefined != nil && opts.AllowUndefined(req.key) {
			continue
		}
		errs = append(errs, fmt.Errorf("label %q does not have known values (%s)", req.key, req))
	}
	if err := r.Intersects(pod); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Matches reports whether a node with the given labels satisfies every requirement.
func (r Requirements) Matches(labels map[string]string) bool {
	for _, req := range r.reqs {
		if v, ok := labels[req.key]; ok {
			if !req.Has(v) {
				return false
			}
		} else if !req.absent {
			return false
		}
	}
	return true
}

// Labels returns the labels r pins to a single value (In with one value),
// the labels a node made from these requirements is known to carry.
func (r Requirements) Labels() map[string]string {
	labels := map[string]string{}
	for _, req := range r.reqs {
		if !req.complement && len(req.values) == 1 {
			labels[req.key] = req.values[0]
		}
	}
	return labels
}

// NodeSelectorRequirements renders r as NodePool/NodeClaim requirements,
// sorted by key, minValues included.
func (r Requirements) NodeSelectorRequirements() []v1.NodeSelectorRequirementWithMinValues {
	var out []v1.NodeSelectorRequirementWithMinValues
	for _, req := range r.reqs {
		out = append(out, req.NodeSelectorRequirements()...)
	}
	return out
}

// String renders r for humans as comma-separated requirements in key order.
func (r Requirements) String() string {
	parts := make([]string, len(r.reqs))
	for i, req := range r.reqs {
		parts[i] = req.String()
	}
	return strings.Join(parts, ", ")
}
