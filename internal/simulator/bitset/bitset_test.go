package bitset

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSet(t *testing.T) {
	cases := map[string]struct {
		n        int
		elements []int
	}{
		"empty":          {n: 10},
		"one word":       {n: 64, elements: []int{0, 5, 63}},
		"several words":  {n: 200, elements: []int{1, 64, 65, 128, 199}},
		"exactly 128":    {n: 128, elements: []int{127}},
		"full small set": {n: 3, elements: []int{0, 1, 2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := New(tc.n)
			for _, e := range tc.elements {
				s.Add(e)
			}
			if diff := cmp.Diff(tc.elements, s.AppendElements(nil)); diff != "" {
				t.Errorf("elements (-want +got):\n%s", diff)
			}
			if s.Count() != len(tc.elements) || s.Empty() != (len(tc.elements) == 0) {
				t.Errorf("Count=%d Empty=%v", s.Count(), s.Empty())
			}
			var walked []int
			for i := s.First(); i >= 0; i = s.Next(i + 1) {
				walked = append(walked, i)
			}
			if !slices.Equal(walked, tc.elements) {
				t.Errorf("First/Next walked %v, want %v", walked, tc.elements)
			}
			full := Full(tc.n)
			if full.Count() != tc.n || !s.SubsetOf(full) {
				t.Errorf("Full(%d) has %d elements", tc.n, full.Count())
			}
			c := full.Copy()
			c.AndNot(s)
			if c.Intersects(s) || c.Count() != tc.n-len(tc.elements) {
				t.Errorf("AndNot left %v", c.AppendElements(nil))
			}
			c.Or(s)
			if !c.Equal(full) {
				t.Errorf("Or did not restore the full set")
			}
			want := -1 // no common element
			if len(tc.elements) > 0 {
				want = tc.elements[0]
			}
			if got := FirstAnd(s, full); got != want {
				t.Errorf("FirstAnd = %d, want %d", got, want)
			}
		})
	}
}
