// Package resources represents resource amounts as fixed-length integer
// vectors (milli-cpu, bytes, pod counts, extended resources by index) so that
// the scheduling simulator adds and compares them without touching
// resource.Quantity in its hot loop, and computes a pod's effective requests
// the way the kube-scheduler does (init containers, sidecars, pod-level
// resources, overhead).
package resources

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Fixed dimensions present in every Index.
const (
	CPU = iota
	Memory
	Pods
	EphemeralStorage
	numFixed
)

// maxAmount bounds any single amount (2^53: 8 PiB of memory, 9e12 cores in
// milli-cpu) so that sums of many amounts cannot overflow int64.
const maxAmount = int64(1) << 53

// Index assigns a vector dimension to each resource name. Build it with
// NewIndex and Add before creating vectors; its length must not change while
// vectors made for it are in use.
type Index struct {
	names []corev1.ResourceName
	dims  map[corev1.ResourceName]int
}

// NewIndex returns an index holding cpu, memory, pods and ephemeral-storage.
func NewIndex() *Index {
	x := &Index{dims: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		x.AddName(n)
	}
	return x
}

// AddName returns the dimension of name, adding it if new.
func (x *Index) AddName(name corev1.ResourceName) int {
	if d, ok := x.dims[name]; ok {
		return d
	}
	x.dims[name] = len(x.names)
	x.names = append(x.names, name)
	return len(x.names) - 1
}

// AddNames adds every name in list, in sorted order so that dimensions are deterministic.
func (x *Index) AddNames(list corev1.ResourceList) {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		x.AddName(n)
	}
}

// Dim returns the dimension of name.
func (x *Index) Dim(name corev1.ResourceName) (int, bool) {
	d, ok := x.dims[name]
	return d, ok
}

// Len returns the number of dimensions.
func (x *Index) Len() int { return len(x.names) }

// Name returns the resource name of dimension d.
func (x *Index) Name(d int) corev1.ResourceName { return x.names[d] }

// Vector is an amount per dimension of an Index: milli-cpu for cpu, the plain
// value (bytes, counts) for everything else.
type Vector []int64

// New returns a zero vector.
func (x *Index) New() Vector { return make(Vector, len(x.names)) }

// Amount converts a quantity of the named resource to the vector's unit. It
// fails for negative or absurdly large quantities.
func Amount(name corev1.ResourceName, q resource.Quantity) (int64, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("negative quantity %s for %s", q.String(), name)
	}
	var v int64
	if name == corev1.ResourceCPU {
		v = q.MilliValue()
	} else {
		v = q.Value()
	}
	if v > maxAmount || v < 0 {
		return 0, fmt.Errorf("quantity %s for %s is out of range", q.String(), name)
	}
	return v, nil
}

// UnknownResourceError says a list names a resource the index does not know,
// which no node or instance type in the model offers.
type UnknownResourceError struct{ Name corev1.ResourceName }

// Error names the resource.
func (e *UnknownResourceError) Error() string {
	return fmt.Sprintf("no node or instance type offers resource %s", e.Name)
}

// AddTo adds list to v. Names the index does not know fail with an
// UnknownResourceError unless their amount is zero.
func (x *Index) AddTo(v Vector, list corev1.ResourceList) error {
	for name, q := range list {
		a, err := Amount(name, q)
		if err != nil {
			return err
		}
		d, ok := x.dims[name]
		if !ok {
			if a == 0 {
				continue
			}
			return &UnknownResourceError{Name: name}
		}
		v[d] += a
	}
	return nil
}

// ToList converts v to a resource list, leaving out zero amounts.
func (x *Index) ToList(v Vector) corev1.ResourceList {
	out := corev1.ResourceList{}
	for d, a := range v {
		if a == 0 {
			continue
		}
		name := x.names[d]
		switch {
		case name == corev1.ResourceCPU:
			out[name] = *resource.NewMilliQuantity(a, resource.DecimalSI)
		case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[name] = *resource.NewQuantity(a, resource.BinarySI)
		default:
			out[name] = *resource.NewQuantity(a, resource.DecimalSI)
		}
	}
	return out
}

// Format renders the non-zero amounts of v, for example "cpu 1500m, memory 2Gi".
func (x *Index) Format(v Vector) string {
	var parts []string
	list := x.ToList(v)
	for d := range v {
		if q, ok := list[x.names[d]]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", x.names[d], q.String()))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Add adds o to v.
func (v Vector) Add(o Vector) {
	for i := range v {
		v[i] += o[i]
	}
}

// Sub subtracts o from v.
func (v Vector) Sub(o Vector) {
	for i := range v {
		v[i] -= o[i]
	}
}

// Fits reports whether v <= capacity in every dimension.
func (v Vector) Fits(capacity Vector) bool {
	for i, a := range v {
		if a > capacity[i] {
			return false
		}
	}
	return true
}

// FitsSum reports whether v + extra <= capacity in every dimension.
func (v Vector) FitsSum(extra, capacity Vector) bool {
	for i, a := range v {
		if a+extra[i] > capacity[i] {
			return false
		}
	}
	return true
}

// FirstExceeding returns the first dimension where v > capacity, or -1.
func (v Vector) FirstExceeding(capacity Vector) int {
	for i, a := range v {
		if a > capacity[i] {
			return i
		}
	}
	return -1
}

// Max raises v to o where o is larger.
func (v Vector) Max(o Vector) {
	for i := range v {
		v[i] = max(v[i], o[i])
	}
}

// IsZero reports whether every amount is zero.
func (v Vector) IsZero() bool {
	for _, a := range v {
		if a != 0 {
			return false
		}
	}
	return true
}
