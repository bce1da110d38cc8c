package overlay

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Weight bounds of spec.weight.
const (
	MinWeight = 1
	MaxWeight = 10000
)

// restrictedResources are the resources an overlay may not add or replace:
// the ones the instance type's shape and the kubelet decide.
var restrictedResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods,
}

// Overlay is a NodeOverlay parsed and validated for application.
type Overlay struct {
	// Name is the NodeOverlay's name.
	Name string
	// Weight is spec.weight, 0 when unset.
	Weight int32
	// Requirements are spec.requirements.
	Requirements requirements.Requirements
	// Price is the price change, nil when the overlay changes no price.
	Price *PriceChange
	// Capacity is spec.capacity: extended resources only.
	Capacity corev1.ResourceList
}

// PriceChange is a parsed spec.price or spec.priceAdjustment.
type PriceChange struct {
	// Kind says how Value changes a price.
	Kind PriceChangeKind
	// Value is the price, the amount, or the percentage.
	Value float64
	// Text is the field as written, for messages.
	Text string
}

// PriceChangeKind says how a PriceChange changes a price.
type PriceChangeKind int

// The kinds of price change.
const (
	// PriceSet replaces the price (spec.price).
	PriceSet PriceChangeKind = iota
	// PriceAdd adds a signed amount (spec.priceAdjustment "-0.5").
	PriceAdd
	// PricePercent changes the price by a signed percentage
	// (spec.priceAdjustment "-10%").
	PricePercent
)

// Apply returns the changed price, never below zero.
func (p PriceChange) Apply(price float64) float64 {
	switch p.Kind {
	case PriceSet:
		price = p.Value
	case PriceAdd:
		price += p.Value
	case PricePercent:
		price *= 1 + p.Value/100
	}
	return max(price, 0)
}

// Parse validates a NodeOverlay beyond what its CRD schema checks (or in
// case the schema was bypassed) and returns it parsed. The error names
// every offending field.
func Parse(no *v1alpha1.NodeOverlay) (Overlay, error) {
	o := Overlay{Name: no.Name, Weight: no.WeightOrZero()}
	var errs []error
	if w := no.Spec.Weight; w != nil && (*w < MinWeight || *w > MaxWeight) {
		errs = append(errs, fmt.Errorf("spec.weight: %d is not between %d and %d", *w, MinWeight, MaxWeight))
	}
	rs := make([]requirements.Requirement, 0, len(no.Spec.Requirements))
	for i, r := range no.Spec.Requirements {
		if problems := validation.IsQualifiedName(r.Key); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("spec.requirements[%d].key: %q is not a label key: %s", i, r.Key, strings.Join(problems, "; ")))
			continue
		}
		req, err := requirements.New(r.Key, r.Operator, r.Values...)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.requirements[%d]: %w", i, err))
			continue
		}
		if slices.ContainsFunc(rs, func(have requirements.Requirement) bool { return have.Key() == r.Key }) {
			// Requirements on the same key are ANDed, as in a NodePool.
			for j := range rs {
				if rs[j].Key() == r.Key {
					rs[j] = rs[j].Intersect(req)
				}
			}
			continue
		}
		rs = append(rs, req)
	}
	o.Requirements = requirements.NewRequirements(rs...)
	switch {
	case no.Spec.Price != nil && no.Spec.PriceAdjustment != nil:
		errs = append(errs, errors.New("spec.price and spec.priceAdjustment: cannot set both"))
	case no.Spec.Price != nil:
		p, err := parsePrice(*no.Spec.Price)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.price: %w", err))
		} else {
			o.Price = &p
		}
	case no.Spec.PriceAdjustment != nil:
		p, err := parseAdjustment(*no.Spec.PriceAdjustment)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.priceAdjustment: %w", err))
		} else {
			o.Price = &p
		}
	}
	for _, name := range slices.Sorted(maps.Keys(no.Spec.Capacity)) {
		q := no.Spec.Capacity[name]
		switch {
		case slices.Contains(restrictedResources, name):
			errs = append(errs, fmt.Errorf("spec.capacity[%s]: only extended resources may be set, not %s", name, name))
		case q.Sign() < 0:
			errs = append(errs, fmt.Errorf("spec.capacity[%s]: %s is negative", name, q.String()))
		}
	}
	if len(no.Spec.Capacity) > 0 {
		o.Capacity = no.Spec.Capacity.DeepCopy()
	}
	if err := errors.Join(errs...); err != nil {
		return Overlay{}, fmt.Errorf("nodeoverlay %s: %w", no.Name, err)
	}
	return o, nil
}

// parsePrice parses spec.price: an unsigned decimal number of dollars.
func parsePrice(s string) (PriceChange, error) {
	if s == "" || strings.ContainsAny(s[:1], "+-") {
		return PriceChange{}, fmt.Errorf("%q is not an unsigned price such as \"0.25\"", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return PriceChange{}, fmt.Errorf("%q is not an unsigned price such as \"0.25\"", s)
	}
	return PriceChange{Kind: PriceSet, Value: v, Text: s}, nil
}

// parseAdjustment parses spec.priceAdjustment: a signed amount ("-0.5",
// "+1.2") or a signed percentage ("+10%", "-15%", at least -100%).
func parseAdjustment(s string) (PriceChange, error) {
	bad := fmt.Errorf("%q is not a signed amount (\"-0.5\", \"+1.2\") or a signed percentage (\"+10%%\", \"-15%%\")", s)
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return PriceChange{}, bad
	}
	kind, number := PriceAdd, s
	if strings.HasSuffix(s, "%") {
		kind, number = PricePercent, strings.TrimSuffix(s, "%")
	}
	if strings.ContainsAny(number[1:], "+-eEinIN") {
		return PriceChange{}, bad
	}
	v, err := strconv.ParseFloat(number, 64)
	if err != nil {
		return PriceChange{}, bad
	}
	if kind == PricePercent && v < -100 {
		return PriceChange{}, fmt.Errorf("%q lowers the price by more than 100%%", s)
	}
	return PriceChange{Kind: kind, Value: v, Text: s}, nil
}

// Sort orders overlays by precedence: weight, highest first, then name,
// the name that sorts last first (Karpenter's order for equal weights).
func Sort(overlays []Overlay) {
	slices.SortStableFunc(overlays, func(a, b Overlay) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(b.Name, a.Name))
	})
}
