package requirements

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Requirement is the set of nodes one label key admits. It is either a finite
// set of allowed values or a cofinite set (every value except some excluded
// ones) optionally bounded to integers in an open interval, plus whether a node
// without the label qualifies.
//
// The zero value admits nothing; build values with New or the From* functions.
type Requirement struct {
	key string
	// complement: values lists excluded values and every other value is allowed.
	complement bool
	// values is sorted and unique. It is never shared with callers.
	values []string
	// hasGT/hasLT bound allowed values to integers in (gt, lt). Only cofinite
	// requirements carry bounds: finite ones apply them to their values.
	hasGT, hasLT bool
	gt, lt       int64
	// absent: a node without the label satisfies the requirement.
	absent bool
	// minValues is the minimum number of distinct values of this key the
	// instance types of a NodeClaim must cover; 0 means no minimum.
	minValues int
}

// New builds the requirement "key op values". It fails on input the
// Kubernetes API would reject: In and NotIn without values, Exists and
// DoesNotExist with values, Gt/Lt/Gte/Lte without exactly one integer.
func New(key string, op corev1.NodeSelectorOperator, values ...string) (Requirement, error) {
	r := Requirement{key: key}
	switch op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(values) == 0 {
			return Requirement{}, fmt.Errorf("requirement %s %s needs at least one value", key, op)
		}
		r.values = sortedUnique(values)
		r.complement = op == corev1.NodeSelectorOpNotIn
		r.absent = r.complement
	case corev1.NodeSelectorOpExists:
		if len(values) != 0 {
			return Requirement{}, fmt.Errorf("requirement %s Exists takes no values, got %v", key, values)
		}
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		if len(values) != 0 {
			return Requirement{}, fmt.Errorf("requirement %s DoesNotExist takes no values, got %v", key, values)
		}
		r.absent = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if len(values) != 1 {
			return Requirement{}, fmt.Errorf("requirement %s %s needs exactly one integer value, got %v", key, op, values)
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return Requirement{}, fmt.Errorf("requirement %s %s needs an integer value, got %q", key, op, values[0])
		}
		r.complement = true
		switch op {
		case corev1.NodeSelectorOpGt:
			r.hasGT, r.gt = true, n
		case v1.NodeSelectorOpGte:
			if n == math.MinInt64 {
				return Requirement{}, fmt.Errorf("requirement %s Gte %d is out of range", key, n)
			}
			r.hasGT, r.gt = true, n-1
		case corev1.NodeSelectorOpLt:
			r.hasLT, r.lt = true, n
		default: // Lte
			if n == math.MaxInt64 {
				return Requirement{}, fmt.Errorf("requirement %s Lte %d is out of range", key, n)
			}
			r.hasLT, r.lt = true, n+1
		}
	default:
		return Requirement{}, fmt.Errorf("requirement %s has unknown operator %q", key, op)
	}
	return r.normalized(), nil
}

// In is shorthand for the requirement "key In values"; with no values it
// admits nothing.
func In(key string, values ...string) Requirement {
	return Requirement{key: key, values: sortedUnique(values)}
}

// Exists is the requirement that a node carries the label with any value.
func Exists(key string) Requirement {
	return Requirement{key: key, complement: true}
}

// DoesNotExist is the requirement that a node does not carry the label.
func DoesNotExist(key string) Requirement {
	return Requirement{key: key, absent: true}
}

// Key returns the label key the requirement constrains.
func (r Requirement) Key() string { return r.key }

// MinValues returns the minimum number of distinct values of the key that a
// NodeClaim's instance types must cover, or 0 when there is none.
func (r Requirement) MinValues() int { return r.minValues }

// WithMinValues returns a copy of the requirement with the given minValues
// (0 removes it).
func (r Requirement) WithMinValues(n int) Requirement {
	r.minValues = max(n, 0)
	return r
}

// Has reports whether a node whose label has the given value satisfies the
// requirement.
func (r Requirement) Has(value string) bool {
	if r.complement {
		return !contains(r.values, value) && r.within(value)
	}
	return contains(r.values, value)
}

// AllowsAbsent reports whether a node without the label satisfies the requirement.
func (r Requirement) AllowsAbsent() bool { return r.absent }

// Satisfiable reports whether any node (with or without the label) satisfies the requirement.
func (r Requirement) Satisfiable() bool {
	return r.absent || r.complement || len(r.values) > 0
}

// Finite reports whether the allowed values are a finite set (In or
// DoesNotExist), as opposed to "all values except ..." (NotIn, Exists, Gt, Lt).
func (r Requirement) Finite() bool { return !r.complement }

// Values returns a copy of the allowed values of a finite requirement, or the
// excluded values of a cofinite one, sorted.
func (r Requirement) Values() []string { return slices.Clone(r.values) }

// Len returns the number of allowed values, or math.MaxInt for a cofinite requirement.
func (r Requirement) Len() int {
	if r.complement {
		return math.MaxInt
	}
	return len(r.values)
}

// Bounds returns the exclusive integer bounds of a cofinite requirement: ok
// flags say whether each bound is set.
func (r Requirement) Bounds() (gt int64, hasGT bool, lt int64, hasLT bool) {
	return r.gt, r.hasGT, r.lt, r.hasLT
}

// Equal reports whether two requirements are identical, minValues included.
func (r Requirement) Equal(o Requirement) bool {
	return r.key == o.key && r.complement == o.complement && r.absent == o.absent &&
		r.hasGT == o.hasGT && r.hasLT == o.hasLT && r.gt == o.gt && r.lt == o.lt &&
		r.minValues == o.minValues && slices.Equal(r.values, o.values)
}

// Intersect returns the requirement satisfied exactly by the nodes that satisfy
// both r and o. Both must constrain the same key; the result carries r's key
// and the larger minValues.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{key: r.key, absent: r.absent && o.absent, minValues: max(r.minValues, o.minValues)}
	switch {
	case r.complement && o.complement:
		out.complement = true
		out.values = union(r.values, o.values)
		out.hasGT, out.gt = r.hasGT || o.hasGT, maxBound(r.hasGT, r.gt, o.hasGT, o.gt)
		out.hasLT, out.lt = r.hasLT || o.hasLT, minBound(r.hasLT, r.lt, o.hasLT, o.lt)
	case r.complement:
		out.values = filter(o.values, r.Has)
	case o.complement:
		out.values = filter(r.values, o.Has)
	default:
		out.values = intersect(r.values, o.values)
	}
	return out.normalized()
}

// normalized returns the canonical form: cofinite requirements whose integer
// range is empty become the empty finite set, and excluded values the bounds
// already rule out are dropped, so that equal sets have equal representations.
func (r Requirement) normalized() Requirement {
	if !r.complement {
		r.hasGT, r.hasLT, r.gt, r.lt = false, false, 0, 0
		if len(r.values) == 0 {
			r.values = nil
		}
		return r
	}
	if r.hasGT && r.hasLT && (r.lt == math.MinInt64 || r.lt-1 <= r.gt) {
		return Requirement{key: r.key, absent: r.absent, minValues: r.minValues}
	}
	if r.hasGT || r.hasLT {
		r.values = filter(r.values, r.within)
	}
	if len(r.values) == 0 {
		r.values = nil
	}
	return r
}

// within reports whether value passes the integer bounds.
func (r Requirement) within(value string) bool {
	if !r.hasGT && !r.hasLT {
		return true
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return false
	}
	return (!r.hasGT || n > r.gt) && (!r.hasLT || n < r.lt)
}

// NodeSelectorRequirements renders the requirement as the Kubernetes
// requirements whose conjunction is equivalent to it. Most requirements take
// one entry; "exists but not in" and bounded ranges take two or three. The
// minValues, if any, is carried on the first entry.
func (r Requirement) NodeSelectorRequirements() []v1.NodeSelectorRequirementWithMinValues {
	var out []v1.NodeSelectorRequirementWithMinValues
	add := func(op corev1.NodeSelectorOperator, values ...string) {
		out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: r.key, Operator: op, Values: values})
	}
	switch {
	case !r.complement && len(r.values) > 0:
		add(corev1.NodeSelectorOpIn, slices.Clone(r.values)...)
	case !r.complement && r.absent:
		add(corev1.NodeSelectorOpDoesNotExist)
	case !r.complement:
		// Unsatisfiable: an In without values says so and is rejected by the API.
		add(corev1.NodeSelectorOpIn)
	default:
		if r.hasGT {
			add(corev1.NodeSelectorOpGt, strconv.FormatInt(r.gt, 10))
		}
		if r.hasLT {
			add(corev1.NodeSelectorOpLt, strconv.FormatInt(r.lt, 10))
		}
		if !r.absent && !r.hasGT && !r.hasLT {
			add(corev1.NodeSelectorOpExists)
		}
		if len(r.values) > 0 {
			add(corev1.NodeSelectorOpNotIn, slices.Clone(r.values)...)
		}
	}
	if r.minValues > 0 && len(out) > 0 {
		out[0].MinValues = new(r.minValues)
	}
	return out
}

// maxListedValues bounds how many values String prints.
const maxListedValues = 8

// String renders the requirement for humans, for example
// "karpenter.k8s.aws/instance-category In [g p]".
func (r Requirement) String() string {
	var b strings.Builder
	for i, nsr := range r.NodeSelectorRequirements() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.key)
		b.WriteByte(' ')
		b.WriteString(string(nsr.Operator))
		switch {
		case nsr.Operator == corev1.NodeSelectorOpGt || nsr.Operator == corev1.NodeSelectorOpLt:
			b.WriteString(" " + nsr.Values[0])
		case len(nsr.Values) > 0:
			b.WriteString(" " + formatValues(nsr.Values))
		}
	}
	if r.minValues > 0 {
		fmt.Fprintf(&b, " (minValues %d)", r.minValues)
	}
	return b.String()
}

func formatValues(values []string) string {
	shown := values
	if len(shown) > maxListedValues {
		shown = shown[:maxListedValues]
	}
	s := "[" + strings.Join(shown, " ")
	if len(values) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(values)-len(shown))
	}
	return s + "]"
}

func maxBound(hasA bool, a int64, hasB bool, b int64) int64 {
	switch {
	case hasA && hasB:
		return max(a, b)
	case hasA:
		return a
	case hasB:
		return b
	}
	return 0
}

func minBound(hasA bool, a int64, hasB bool, b int64) int64 {
	switch {
	case hasA && hasB:
		return min(a, b)
	case hasA:
		return a
	case hasB:
		return b
	}
	return 0
}

func sortedUnique(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

func contains(sorted []string, v string) bool {
	_, ok := slices.BinarySearch(sorted, v)
	return ok
}

func filter(values []string, keep func(string) bool) []string {
	var out []string
	for _, v := range values {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
