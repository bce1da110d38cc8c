package simulator

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// TestCompiledRequirementsAgree checks that the interned requirement algebra
// the solver uses agrees with the requirements package: compiling and
// decompiling round-trips, and intersection and membership give the same
// answers.
func TestCompiledRequirementsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []string{"a", "b", "c", "-2", "0", "3", "7", "07", "10"}
	ops := []corev1.NodeSelectorOperator{
		corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	}
	random := func() requirements.Requirement {
		for {
			op := ops[rng.IntN(len(ops))]
			var vs []string
			switch op {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				for range 1 + rng.IntN(3) {
					vs = append(vs, values[rng.IntN(len(values))])
				}
			case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
				vs = []string{[]string{"-2", "0", "3", "7"}[rng.IntN(4)]}
			}
			if r, err := requirements.New("k", op, vs...); err == nil {
				return r
			}
		}
	}
	keys, vals := newInterner(), newInterner()
	for _, v := range values {
		vals.id(v)
	}
	for i := range 5000 {
		a, b := random(), random()
		ca, cb := compileReq(keys, vals, a), compileReq(keys, vals, b)
		if back := decompile(keys, vals, ca); !sameSet(back, a, values) {
			t.Fatalf("case %d: %s compiles back to %s", i, a, back)
		}
		want := a.Intersect(b)
		got := intersect(vals, &ca, &cb)
		if got.satisfiable() != want.Satisfiable() {
			t.Fatalf("case %d: %s ∩ %s satisfiable %v, want %v", i, a, b, got.satisfiable(), want.Satisfiable())
		}
		if back := decompile(keys, vals, got); !sameSet(back, want, values) {
			t.Fatalf("case %d: %s ∩ %s = %s, want %s", i, a, b, back, want)
		}
		for _, v := range values {
			if got.has(vals, vals.id(v)) != want.Has(v) {
				t.Fatalf("case %d: (%s ∩ %s) has %q: %v, want %v", i, a, b, v, got.has(vals, vals.id(v)), want.Has(v))
			}
		}
	}
}

func sameSet(a, b requirements.Requirement, probes []string) bool {
	if a.AllowsAbsent() != b.AllowsAbsent() {
		return false
	}
	for _, v := range append(probes, "11", "zz") {
		if a.Has(v) != b.Has(v) {
			return false
		}
	}
	return true
}
