package requirements

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func mustNew(t *testing.T, key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
	t.Helper()
	r, err := New(key, op, values...)
	if err != nil {
		t.Fatalf("New(%s %s %v): %v", key, op, values, err)
	}
	return r
}

func TestNewValidates(t *testing.T) {
	cases := map[string]struct {
		op      corev1.NodeSelectorOperator
		values  []string
		wantErr bool
	}{
		"In without values":        {op: corev1.NodeSelectorOpIn, wantErr: true},
		"NotIn without values":     {op: corev1.NodeSelectorOpNotIn, wantErr: true},
		"Exists with values":       {op: corev1.NodeSelectorOpExists, values: []string{"a"}, wantErr: true},
		"DoesNotExist with values": {op: corev1.NodeSelectorOpDoesNotExist, values: []string{"a"}, wantErr: true},
		"Gt without value":         {op: corev1.NodeSelectorOpGt, wantErr: true},
		"Gt two values":            {op: corev1.NodeSelectorOpGt, values: []string{"1", "2"}, wantErr: true},
		"Gt not integer":           {op: corev1.NodeSelectorOpGt, values: []string{"x"}, wantErr: true},
		"Lte not integer":          {op: v1.NodeSelectorOpLte, values: []string{"1.5"}, wantErr: true},
		"unknown operator":         {op: "Near", values: []string{"a"}, wantErr: true},
		"In":                       {op: corev1.NodeSelectorOpIn, values: []string{"a"}},
		"NotIn":                    {op: corev1.NodeSelectorOpNotIn, values: []string{"a"}},
		"Exists":                   {op: corev1.NodeSelectorOpExists},
		"DoesNotExist":             {op: corev1.NodeSelectorOpDoesNotExist},
		"Gt":                       {op: corev1.NodeSelectorOpGt, values: []string{"3"}},
		"Lt negative":              {op: corev1.NodeSelectorOpLt, values: []string{"-3"}},
		"Gte":                      {op: v1.NodeSelectorOpGte, values: []string{"3"}},
		"Lte":                      {op: v1.NodeSelectorOpLte, values: []string{"3"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New("k", tc.op, tc.values...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New() error = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestHas(t *testing.T) {
	type probe struct {
		value string
		want  bool
	}
	cases := map[string]struct {
		op         corev1.NodeSelectorOperator
		values     []string
		probes     []probe
		wantAbsent bool
	}{
		"In":           {op: corev1.NodeSelectorOpIn, values: []string{"a", "b"}, probes: []probe{{"a", true}, {"b", true}, {"c", false}}},
		"NotIn":        {op: corev1.NodeSelectorOpNotIn, values: []string{"a"}, probes: []probe{{"a", false}, {"b", true}}, wantAbsent: true},
		"Exists":       {op: corev1.NodeSelectorOpExists, probes: []probe{{"a", true}, {"", true}}},
		"DoesNotExist": {op: corev1.NodeSelectorOpDoesNotExist, probes: []probe{{"a", false}}, wantAbsent: true},
		"Gt":           {op: corev1.NodeSelectorOpGt, values: []string{"4"}, probes: []probe{{"4", false}, {"5", true}, {"x", false}, {"-9", false}}},
		"Lt":           {op: corev1.NodeSelectorOpLt, values: []string{"4"}, probes: []probe{{"4", false}, {"3", true}, {"-9", true}, {"x", false}}},
		"Gte":          {op: v1.NodeSelectorOpGte, values: []string{"4"}, probes: []probe{{"3", false}, {"4", true}, {"5", true}}},
		"Lte":          {op: v1.NodeSelectorOpLte, values: []string{"4"}, probes: []probe{{"5", false}, {"4", true}, {"3", true}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := mustNew(t, "k", tc.op, tc.values...)
			for _, p := range tc.probes {
				if got := r.Has(p.value); got != p.want {
					t.Errorf("%s.Has(%q) = %v, want %v", r, p.value, got, p.want)
				}
			}
			if got := r.AllowsAbsent(); got != tc.wantAbsent {
				t.Errorf("%s.AllowsAbsent() = %v, want %v", r, got, tc.wantAbsent)
			}
		})
	}
}

func TestIntersect(t *testing.T) {
	type req struct {
		op     corev1.NodeSelectorOperator
		values []string
	}
	cases := map[string]struct {
		a, b            req
		wantString      string
		wantSatisfiable bool
	}{
		"In and In overlap":       {a: req{"In", []string{"a", "b"}}, b: req{"In", []string{"b", "c"}}, wantString: "k In [b]", wantSatisfiable: true},
		"In and In disjoint":      {a: req{"In", []string{"a"}}, b: req{"In", []string{"b"}}, wantString: "k In", wantSatisfiable: false},
		"In and NotIn":            {a: req{"In", []string{"a", "b"}}, b: req{"NotIn", []string{"a"}}, wantString: "k In [b]", wantSatisfiable: true},
		"NotIn and NotIn":         {a: req{"NotIn", []string{"a"}}, b: req{"NotIn", []string{"b"}}, wantString: "k NotIn [a b]", wantSatisfiable: true},
		"NotIn and DoesNotExist":  {a: req{"NotIn", []string{"a"}}, b: req{"DoesNotExist", nil}, wantString: "k DoesNotExist", wantSatisfiable: true},
		"In and DoesNotExist":     {a: req{"In", []string{"a"}}, b: req{"DoesNotExist", nil}, wantString: "k In", wantSatisfiable: false},
		"Exists and DoesNotExist": {a: req{"Exists", nil}, b: req{"DoesNotExist", nil}, wantString: "k In", wantSatisfiable: false},
		"Exists and NotIn":        {a: req{"Exists", nil}, b: req{"NotIn", []string{"a"}}, wantString: "k Exists, k NotIn [a]", wantSatisfiable: true},
		"Gt and Lt range":         {a: req{"Gt", []string{"1"}}, b: req{"Lt", []string{"5"}}, wantString: "k Gt 1, k Lt 5", wantSatisfiable: true},
		"Gt and Lt empty range":   {a: req{"Gt", []string{"4"}}, b: req{"Lt", []string{"5"}}, wantString: "k In", wantSatisfiable: false},
		"Gte and Lte one value":   {a: req{v1.NodeSelectorOpGte, []string{"4"}}, b: req{v1.NodeSelectorOpLte, []string{"4"}}, wantString: "k Gt 3, k Lt 5", wantSatisfiable: true},
		"Gt and In filters":       {a: req{"Gt", []string{"4"}}, b: req{"In", []string{"2", "8", "x"}}, wantString: "k In [8]", wantSatisfiable: true},
		"Gt and NotIn drops":      {a: req{"Gt", []string{"4"}}, b: req{"NotIn", []string{"2", "8", "x"}}, wantString: "k Gt 4, k NotIn [8]", wantSatisfiable: true},
		"Gt and Gt keeps larger":  {a: req{"Gt", []string{"4"}}, b: req{"Gt", []string{"9"}}, wantString: "k Gt 9", wantSatisfiable: true},
		"Lt and DoesNotExist":     {a: req{"Lt", []string{"4"}}, b: req{"DoesNotExist", nil}, wantString: "k In", wantSatisfiable: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := mustNew(t, "k", tc.a.op, tc.a.values...)
			b := mustNew(t, "k", tc.b.op, tc.b.values...)
			got := a.Intersect(b)
			if diff := cmp.Diff(tc.wantString, got.String()); diff != "" {
				t.Errorf("Intersect string (-want +got):\n%s", diff)
			}
			if got.Satisfiable() != tc.wantSatisfiable {
				t.Errorf("Satisfiable() = %v, want %v", got.Satisfiable(), tc.wantSatisfiable)
			}
			if !got.Equal(b.Intersect(a)) {
				t.Errorf("Intersect is not commutative: %s vs %s", got, b.Intersect(a))
			}
		})
	}
}

func TestMinValues(t *testing.T) {
	a := In("k", "a", "b", "c").WithMinValues(2)
	b := Exists("k").WithMinValues(3)
	if got := a.Intersect(b).MinValues(); got != 3 {
		t.Errorf("MinValues() = %d, want 3", got)
	}
	nsrs := a.NodeSelectorRequirements()
	if len(nsrs) != 1 || nsrs[0].MinValues == nil || *nsrs[0].MinValues != 2 {
		t.Errorf("NodeSelectorRequirements() = %+v, want one entry with minValues 2", nsrs)
	}
	if got := a.WithMinValues(0).MinValues(); got != 0 {
		t.Errorf("WithMinValues(0).MinValues() = %d, want 0", got)
	}
}

func TestStringTruncatesValues(t *testing.T) {
	r := In("node.kubernetes.io/instance-type", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	want := "node.kubernetes.io/instance-type In [a b c d e f g h and 2 more]"
	if diff := cmp.Diff(want, r.String()); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}
}
