package requirements

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Byte layout of the fuzz input, read as a stream: each requirement takes one
// operator byte (mod 8: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte), a
// count byte (mod 4) and that many value bytes (indexes into fuzzValues; for
// the integer operators the first is used as the bound). Missing bytes read as
// zero, so every input decodes.
var fuzzOps = [...]corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist,
	corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte,
}

// fuzzValues mixes words, integers and a non-canonical integer ("07") so that
// bounds and value sets interact.
func fuzzValues() []string {
	return []string{"a", "b", "c", "-2", "0", "3", "7", "07", "10", "x1"}
}

var fuzzInts = [...]string{"-2", "0", "3", "7", "10"}

type byteStream struct {
	data []byte
	pos  int
}

func (s *byteStream) next() byte {
	if s.pos >= len(s.data) {
		return 0
	}
	b := s.data[s.pos]
	s.pos++
	return b
}

func (s *byteStream) requirement(t *testing.T, key string) Requirement {
	t.Helper()
	op := fuzzOps[int(s.next())%len(fuzzOps)]
	n := int(s.next()) % 4
	values := fuzzValues()
	var picked []string
	for range n {
		picked = append(picked, values[int(s.next())%len(values)])
	}
	switch op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(picked) == 0 {
			picked = []string{"a"}
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		picked = nil
	default:
		bound := fuzzInts[0]
		if len(picked) > 0 {
			bound = fuzzInts[int(picked[0][0])%len(fuzzInts)]
		}
		picked = []string{bound}
	}
	r, err := New(key, op, picked...)
	if err != nil {
		t.Fatalf("decoding %s %s %v: %v", key, op, picked, err)
	}
	if n == 3 {
		r = r.WithMinValues(int(s.next()) % 3)
	}
	return r
}

func (s *byteStream) requirements(t *testing.T) Requirements {
	t.Helper()
	keys := []string{"k1", "k2", "k3"}
	n := int(s.next()) % 4
	var rs []Requirement
	for range n {
		rs = append(rs, s.requirement(t, keys[int(s.next())%len(keys)]))
	}
	return NewRequirements(rs...)
}

func addSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 2, 0, 1, 1, 1, 1})
	f.Add([]byte{4, 1, 5, 5, 1, 7, 1, 2, 3})
	f.Add([]byte{1, 3, 0, 1, 2, 2, 3, 0, 4, 1, 6})
	f.Add([]byte{3, 0, 2, 0, 6, 1, 9, 7, 1, 4})
}

// FuzzRequirementLaws checks that intersection is commutative, idempotent and
// associative, that it means "both" for every probed value and for absence,
// and that rendering to Kubernetes requirements and back keeps the meaning.
func FuzzRequirementLaws(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteStream{data: data}
		a, b, c := s.requirement(t, "k"), s.requirement(t, "k"), s.requirement(t, "k")
		ab, ba := a.Intersect(b), b.Intersect(a)
		if !ab.Equal(ba) {
			t.Fatalf("not commutative: %s ∩ %s = %s, reversed %s", a, b, ab, ba)
		}
		if aa := a.Intersect(a); !aa.Equal(a) {
			t.Fatalf("not idempotent: %s ∩ itself = %s", a, aa)
		}
		if l, r := ab.Intersect(c), a.Intersect(b.Intersect(c)); !l.Equal(r) {
			t.Fatalf("not associative: (%s ∩ %s) ∩ %s = %s, other grouping %s", a, b, c, l, r)
		}
		for _, v := range append(fuzzValues(), "11", "+3", "") {
			if got, want := ab.Has(v), a.Has(v) && b.Has(v); got != want {
				t.Fatalf("(%s ∩ %s).Has(%q) = %v, want %v", a, b, v, got, want)
			}
		}
		if got, want := ab.AllowsAbsent(), a.AllowsAbsent() && b.AllowsAbsent(); got != want {
			t.Fatalf("(%s ∩ %s).AllowsAbsent() = %v, want %v", a, b, got, want)
		}
		if !ab.Satisfiable() {
			return
		}
		back, err := FromNodePoolRequirements(ab.NodeSelectorRequirements())
		if err != nil {
			t.Fatalf("rendering %s does not parse back: %v", ab, err)
		}
		got, _ := back.Get("k")
		for _, v := range append(fuzzValues(), "11", "+3") {
			if got.Has(v) != ab.Has(v) {
				t.Fatalf("round trip of %s via %v changed Has(%q)", ab, ab.NodeSelectorRequirements(), v)
			}
		}
		if got.AllowsAbsent() != ab.AllowsAbsent() || got.MinValues() != ab.MinValues() {
			t.Fatalf("round trip of %s gave %s", ab, got)
		}
	})
}

// FuzzRequirementsCompatibility checks that conjunctions over several keys
// intersect commutatively and idempotently, that compatibility (Intersects) is
// symmetric and agrees with the satisfiability of the intersection, and that
// Matches agrees with both sides on concrete label sets.
func FuzzRequirementsCompatibility(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteStream{data: data}
		a, b := s.requirements(t), s.requirements(t)
		ab := a.Intersect(b)
		if !ab.Equal(b.Intersect(a)) {
			t.Fatalf("not commutative: %s ∩ %s", a, b)
		}
		if !a.Intersect(a).Equal(a) {
			t.Fatalf("not idempotent: %s", a)
		}
		errAB, errBA := a.Intersects(b), b.Intersects(a)
		if (errAB == nil) != (errBA == nil) {
			t.Fatalf("compatibility not symmetric: %s vs %s: %v / %v", a, b, errAB, errBA)
		}
		if a.Satisfiable() == nil && b.Satisfiable() == nil && (errAB == nil) != (ab.Satisfiable() == nil) {
			t.Fatalf("Intersects(%s, %s) = %v but Satisfiable(intersection) = %v", a, b, errAB, ab.Satisfiable())
		}
		values := fuzzValues()
		for i := range 8 {
			labels := map[string]string{}
			for j, key := range []string{"k1", "k2", "k3"} {
				pick := (int(s.next()) + i + j) % (len(values) + 1)
				if pick < len(values) {
					labels[key] = values[pick]
				}
			}
			if got, want := ab.Matches(labels), a.Matches(labels) && b.Matches(labels); got != want {
				t.Fatalf("(%s ∩ %s).Matches(%v) = %v, want %v", a, b, labels, got, want)
			}
		}
	})
}
