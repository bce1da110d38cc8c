package simulator

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// interner maps strings (label keys, label values, namespaces) to dense int32
// ids so that requirements compare integers. A solve that meets strings the
// model never saw layers a child interner over the model's, leaving the
// model's untouched.
type interner struct {
	parent *interner
	base   int32 // ids below base belong to parent
	ids    map[string]int32
	strs   []string
	nums   []int64 // integer value of the string, if isNum
	isNum  []bool
}

func newInterner() *interner { return &interner{ids: map[string]int32{}} }

// child returns an interner that extends in without modifying it.
func (in *interner) child() *interner {
	return &interner{parent: in, base: in.size(), ids: map[string]int32{}}
}

func (in *interner) size() int32 { return in.base + int32(len(in.strs)) }

func (in *interner) lookup(s string) (int32, bool) {
	if in.parent != nil {
		if id, ok := in.parent.lookup(s); ok {
			return id, true
		}
	}
	id, ok := in.ids[s]
	return id, ok
}

func (in *interner) id(s string) int32 {
	if id, ok := in.lookup(s); ok {
		return id
	}
	id := in.size()
	in.ids[s] = id
	in.strs = append(in.strs, s)
	n, err := strconv.ParseInt(s, 10, 64)
	in.nums = append(in.nums, n)
	in.isNum = append(in.isNum, err == nil)
	return id
}

func (in *interner) str(id int32) string {
	if id < in.base {
		return in.parent.str(id)
	}
	return in.strs[id-in.base]
}

func (in *interner) num(id int32) (int64, bool) {
	if id < in.base {
		return in.parent.num(id)
	}
	return in.nums[id-in.base], in.isNum[id-in.base]
}

// creq is a requirements.Requirement over interned keys and values, with the
// same semantics: a finite set of allowed values or a cofinite set with
// optional integer bounds, plus whether an unlabelled node qualifies.
type creq struct {
	key        int32
	complement bool
	vals       []int32 // sorted ids; allowed (finite) or excluded (cofinite)
	hasGT      bool
	hasLT      bool
	gt, lt     int64
	absent     bool
	minValues  int32
}

// compileReq interns a requirement.
func compileReq(keys, vals *interner, r requirements.Requirement) creq {
	c := creq{key: keys.id(r.Key()), complement: !r.Finite(), absent: r.AllowsAbsent(), minValues: int32(r.MinValues())}
	c.gt, c.hasGT, c.lt, c.hasLT = r.Bounds()
	for _, v := range r.Values() {
		c.vals = append(c.vals, vals.id(v))
	}
	slices.Sort(c.vals)
	return c
}

// decompile turns a compiled requirement back into a requirements.Requirement.
func decompile(keys, vals *interner, c creq) requirements.Requirement {
	key := keys.str(c.key)
	strs := make([]string, len(c.vals))
	for i, v := range c.vals {
		strs[i] = vals.str(v)
	}
	var r requirements.Requirement
	switch {
	case !c.complement && len(strs) == 0 && c.absent:
		r = requirements.DoesNotExist(key)
	case !c.complement:
		r = requirements.In(key, strs...)
	case c.absent:
		// Only NotIn admits a missing label among the cofinite requirements.
		r = requirements.DoesNotExist(key)
		if nr, err := requirements.New(key, corev1.NodeSelectorOpNotIn, strs...); err == nil {
			r = nr
		}
	default:
		r = requirements.Exists(key)
		bound := func(op corev1.NodeSelectorOperator, n int64) {
			if b, err := requirements.New(key, op, strconv.FormatInt(n, 10)); err == nil {
				r = r.Intersect(b)
			}
		}
		if c.hasGT {
			bound(corev1.NodeSelectorOpGt, c.gt)
		}
		if c.hasLT {
			bound(corev1.NodeSelectorOpLt, c.lt)
		}
		if b, err := requirements.New(key, corev1.NodeSelectorOpNotIn, strs...); err == nil {
			r = r.Intersect(b)
		}
	}
	return r.WithMinValues(int(c.minValues))
}

func containsID(sorted []int32, v int32) bool {
	_, ok := slices.BinarySearch(sorted, v)
	return ok
}

// has reports whether a node whose label has value v satisfies c.
func (c *creq) has(vals *interner, v int32) bool {
	if !c.complement {
		return containsID(c.vals, v)
	}
	if containsID(c.vals, v) {
		return false
	}
	if !c.hasGT && !c.hasLT {
		return true
	}
	n, ok := vals.num(v)
	return ok && (!c.hasGT || n > c.gt) && (!c.hasLT || n < c.lt)
}

func (c *creq) satisfiable() bool { return c.absent || c.complement || len(c.vals) > 0 }

// single returns the only value a satisfiable finite requirement allows.
func (c *creq) single() (int32, bool) {
	if !c.complement && len(c.vals) == 1 && !c.absent {
		return c.vals[0], true
	}
	return 0, false
}

func (c *creq) equal(o *creq) bool {
	return c.key == o.key && c.complement == o.complement && c.absent == o.absent &&
		c.hasGT == o.hasGT && c.hasLT == o.hasLT && c.gt == o.gt && c.lt == o.lt &&
		c.minValues == o.minValues && slices.Equal(c.vals, o.vals)
}

// intersect returns the compiled intersection of a and b (same key).
func intersect(vals *interner, a, b *creq) creq {
	out := creq{key: a.key, absent: a.absent && b.absent, minValues: max(a.minValues, b.minValues)}
	switch {
	case a.complement && b.complement:
		out.complement = true
		out.vals = unionIDs(a.vals, b.vals)
		out.hasGT = a.hasGT || b.hasGT
		out.hasLT = a.hasLT || b.hasLT
		switch {
		case a.hasGT && b.hasGT:
			out.gt = max(a.gt, b.gt)
		case a.hasGT:
			out.gt = a.gt
		case b.hasGT:
			out.gt = b.gt
		}
		switch {
		case a.hasLT && b.hasLT:
			out.lt = min(a.lt, b.lt)
		case a.hasLT:
			out.lt = a.lt
		case b.hasLT:
			out.lt = b.lt
		}
		if out.hasGT && out.hasLT && (out.lt-1 <= out.gt) {
			return creq{key: a.key, absent: out.absent, minValues: out.minValues}
		}
		if out.hasGT || out.hasLT {
			kept := out.vals[:0]
			for _, v := range out.vals {
				if n, ok := vals.num(v); ok && (!out.hasGT || n > out.gt) && (!out.hasLT || n < out.lt) {
					kept = append(kept, v)
				}
			}
			out.vals = kept
		}
	case a.complement:
		out.vals = filterIDs(b.vals, func(v int32) bool { return a.has(vals, v) })
	case b.complement:
		out.vals = filterIDs(a.vals, func(v int32) bool { return b.has(vals, v) })
	default:
		out.vals = intersectIDs(a.vals, b.vals)
	}
	if len(out.vals) == 0 {
		out.vals = nil
	}
	return out
}

func unionIDs(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
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

func intersectIDs(a, b []int32) []int32 {
	var out []int32
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

func filterIDs(ids []int32, keep func(int32) bool) []int32 {
	var out []int32
	for _, v := range ids {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// creqs is a conjunction of compiled requirements sorted by key.
type creqs []creq

func (cs creqs) get(key int32) (*creq, bool) {
	for i := range cs {
		if cs[i].key == key {
			return &cs[i], true
		}
		if cs[i].key > key {
			break
		}
	}
	return nil, false
}

// and returns the conjunction of a and b; the inputs are not modified.
func and(vals *interner, a, b creqs) creqs {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make(creqs, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].key < b[j].key:
			out = append(out, a[i])
			i++
		case a[i].key > b[j].key:
			out = append(out, b[j])
			j++
		default:
			out = append(out, intersect(vals, &a[i], &b[j]))
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// satisfiable reports whether every requirement admits some node.
func (cs creqs) satisfiable() bool {
	for i := range cs {
		if !cs[i].satisfiable() {
			return false
		}
	}
	return true
}

func compileReqs(keys, vals *interner, rs requirements.Requirements) creqs {
	list := rs.List()
	out := make(creqs, 0, len(list))
	for _, r := range list {
		out = append(out, compileReq(keys, vals, r))
	}
	slices.SortFunc(out, func(a, b creq) int { return int(a.key) - int(b.key) })
	return out
}

func decompileReqs(keys, vals *interner, cs creqs) requirements.Requirements {
	rs := make([]requirements.Requirement, 0, len(cs))
	for _, c := range cs {
		rs = append(rs, decompile(keys, vals, c))
	}
	return requirements.NewRequirements(rs...)
}

// encode appends a byte encoding of c (key excluded) to buf, for cache keys.
func (c *creq) encode(buf []byte) []byte {
	flags := byte(0)
	if c.complement {
		flags |= 1
	}
	if c.absent {
		flags |= 2
	}
	if c.hasGT {
		flags |= 4
	}
	if c.hasLT {
		flags |= 8
	}
	buf = append(buf, flags)
	if c.hasGT {
		buf = strconv.AppendInt(buf, c.gt, 36)
		buf = append(buf, ',')
	}
	if c.hasLT {
		buf = strconv.AppendInt(buf, c.lt, 36)
		buf = append(buf, ',')
	}
	for _, v := range c.vals {
		buf = strconv.AppendInt(buf, int64(v), 36)
		buf = append(buf, ',')
	}
	return buf
}

// describe renders compiled requirements for messages.
func describe(keys, vals *interner, cs creqs) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, decompile(keys, vals, c).String())
	}
	return strings.Join(parts, ", ")
}
