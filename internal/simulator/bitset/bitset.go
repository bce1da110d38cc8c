// Package bitset is a minimal fixed-size bit set over small integers, used by
// the scheduling simulator to represent sets of instance types so that
// filtering a NodeClaim's candidates is a handful of word-wide AND operations.
package bitset

import "math/bits"

// Set is a bit set; bit i lives in word i/64. Sets combined with And, Or or
// AndNot must have the same length. The zero value is an empty set of length 0.
type Set []uint64

// Words returns how many words a set over n elements needs.
func Words(n int) int { return (n + 63) / 64 }

// New returns an empty set able to hold elements 0..n-1.
func New(n int) Set { return make(Set, Words(n)) }

// Full returns a set holding elements 0..n-1.
func Full(n int) Set {
	s := New(n)
	for i := range s {
		s[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		s[len(s)-1] = (uint64(1) << r) - 1
	}
	return s
}

// Add inserts i.
func (s Set) Add(i int) { s[i>>6] |= 1 << (uint(i) & 63) }

// Remove deletes i.
func (s Set) Remove(i int) { s[i>>6] &^= 1 << (uint(i) & 63) }

// Has reports whether i is in the set.
func (s Set) Has(i int) bool { return s[i>>6]&(1<<(uint(i)&63)) != 0 }

// Copy returns an independent copy.
func (s Set) Copy() Set { return append(Set(nil), s...) }

// CopyFrom overwrites s with o.
func (s Set) CopyFrom(o Set) { copy(s, o) }

// And keeps only the elements also in o.
func (s Set) And(o Set) {
	for i := range s {
		s[i] &= o[i]
	}
}

// AndNot removes the elements in o.
func (s Set) AndNot(o Set) {
	for i := range s {
		s[i] &^= o[i]
	}
}

// Or adds the elements of o.
func (s Set) Or(o Set) {
	for i := range s {
		s[i] |= o[i]
	}
}

// SetAnd overwrites s with a ∩ b.
func (s Set) SetAnd(a, b Set) {
	for i := range s {
		s[i] = a[i] & b[i]
	}
}

// Intersects reports whether s and o share an element.
func (s Set) Intersects(o Set) bool {
	for i := range s {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// SubsetOf reports whether every element of s is in o.
func (s Set) SubsetOf(o Set) bool {
	for i := range s {
		if s[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

// Empty reports whether the set has no element.
func (s Set) Empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// Count returns the number of elements.
func (s Set) Count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// First returns the smallest element, or -1 for an empty set.
func (s Set) First() int { return s.Next(0) }

// Next returns the smallest element >= i, or -1 if there is none.
func (s Set) Next(i int) int {
	w := i >> 6
	if w >= len(s) || i < 0 {
		return -1
	}
	word := s[w] >> (uint(i) & 63)
	if word != 0 {
		return i + bits.TrailingZeros64(word)
	}
	for w++; w < len(s); w++ {
		if s[w] != 0 {
			return w*64 + bits.TrailingZeros64(s[w])
		}
	}
	return -1
}

// FirstAnd returns the smallest element of a ∩ b without building it, or -1.
func FirstAnd(a, b Set) int {
	for i := range a {
		if w := a[i] & b[i]; w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// Equal reports whether both sets hold the same elements.
func (s Set) Equal(o Set) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// AppendElements appends the elements in increasing order to dst.
func (s Set) AppendElements(dst []int) []int {
	for i, w := range s {
		for w != 0 {
			dst = append(dst, i*64+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return dst
}
