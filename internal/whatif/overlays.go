package whatif

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/overlay"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// fieldError is a bad field of an object: its path and what is wrong.
type fieldError struct{ field, msg string }

// Error implements error.
func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// nodeOverlay decodes a NodeOverlay document strictly and refuses one that
// the API server (the CRD's rules, see admitOverlay) or the nodeoverlay
// controller (overlay.Parse) would refuse, naming the field; a file is
// never read with an overlay silently left out. An overlay whose status
// already says ValidationSucceeded=False for its generation (a snapshot of
// a cluster whose controller refused it) is kept without checks: it is
// skipped when overlays are applied, as the decorator skips it.
func nodeOverlay(o *Objects, data []byte) []error {
	var bad []error
	decode := typed(func(_ *Objects, x *v1alpha1.NodeOverlay) {
		if err := validateOverlay(x); err != nil {
			bad = append(bad, err)
			return
		}
		o.NodeOverlays = append(o.NodeOverlays, x)
	})
	if errs := decode(o, data); len(errs) > 0 {
		return errs
	}
	return bad
}

// validateOverlay returns the overlay's problems as one *fieldError naming
// the first bad field (and the others in its message), or nil.
func validateOverlay(no *v1alpha1.NodeOverlay) error {
	if overlay.Skipped(no) {
		return nil
	}
	problems := admitOverlay(no)
	if _, err := overlay.Parse(no); err != nil {
		problems = append(problems, parseProblems(err)...)
	}
	if len(problems) == 0 {
		return nil
	}
	first := problems[0]
	for _, p := range problems[1:] {
		first.msg += fmt.Sprintf("; also %s: %s", p.field, p.msg)
	}
	return &first
}

// The CRD's patterns of spec.price and spec.priceAdjustment, which the API
// server checks before overlay.Parse sees the overlay.
var (
	pricePattern      = regexp.MustCompile(`^\d+(\.\d+)?$`)
	adjustmentPattern = regexp.MustCompile(`^([+-]\d*\.?\d+|\+\d*\.?\d+%|-(\d{1,2}(\.\d+)?|100)%)$`)
)

// admitOverlay checks the rules of the NodeOverlay CRD that overlay.Parse
// does not (they hold for every overlay read from an API server): a name,
// the restricted requirement keys, and the patterns of the price fields.
func admitOverlay(no *v1alpha1.NodeOverlay) []fieldError {
	var out []fieldError
	if no.Name == "" {
		out = append(out, fieldError{"metadata.name", "a NodeOverlay needs a name"})
	}
	for i, r := range no.Spec.Requirements {
		domain, _, _ := strings.Cut(r.Key, "/")
		field := fmt.Sprintf("spec.requirements[%d].key", i)
		switch {
		case r.Key == "kubernetes.io/hostname":
			out = append(out, fieldError{field, `label "kubernetes.io/hostname" is restricted`})
		case strings.Contains(r.Key, "/") && strings.HasSuffix(domain, v1alpha1.Group) &&
			r.Key != v1.CapacityTypeLabelKey && r.Key != v1.NodePoolLabelKey:
			out = append(out, fieldError{field, fmt.Sprintf("label domain %q is restricted (only %s and %s may be used)",
				v1alpha1.Group, v1.CapacityTypeLabelKey, v1.NodePoolLabelKey)})
		}
	}
	if p := no.Spec.Price; p != nil && !pricePattern.MatchString(*p) {
		out = append(out, fieldError{"spec.price", fmt.Sprintf("%q is not an unsigned price such as \"0.25\"", *p)})
	}
	if p := no.Spec.PriceAdjustment; p != nil && !adjustmentPattern.MatchString(*p) {
		out = append(out, fieldError{"spec.priceAdjustment",
			fmt.Sprintf("%q is not a signed amount (\"-0.5\", \"+1.2\") or a signed percentage (\"+10%%\", \"-15%%\", no lower than \"-100%%\")", *p)})
	}
	return out
}

// parseProblems splits overlay.Parse's error ("nodeoverlay NAME: FIELD:
// MESSAGE" for each bad field) into fields and messages.
func parseProblems(err error) []fieldError {
	errs := []error{err}
	if inner := errors.Unwrap(err); inner != nil {
		errs = []error{inner}
		if joined, ok := inner.(interface{ Unwrap() []error }); ok {
			errs = joined.Unwrap()
		}
	}
	out := make([]fieldError, 0, len(errs))
	for _, e := range errs {
		field, msg, ok := strings.Cut(e.Error(), ": ")
		if !ok {
			out = append(out, fieldError{"spec", e.Error()})
			continue
		}
		// "spec.price and spec.priceAdjustment: cannot set both".
		if first, last, both := strings.Cut(field, " and "); both {
			field, msg = last, fmt.Sprintf("%s %s and %s", msg, first, last)
		}
		out = append(out, fieldError{field, msg})
	}
	return out
}

// OverlayUse is a NodeOverlay of the cluster and what became of it.
type OverlayUse struct {
	Name string `json:"name"`
	// NodePools are the NodePools in which it applies to an offering of
	// at least one instance type.
	NodePools []string `json:"nodePools,omitempty"`
	// NotApplied says why it is left out (everywhere, or in the NodePools
	// it names): ValidationSucceeded=False on its status, a conflict with
	// an overlay of the same weight, or a spec the controller refuses.
	NotApplied string `json:"notApplied,omitempty"`
}

// Overlaid holds the instance types each NodePool of a cluster is offered
// with the cluster's NodeOverlays applied as the overlay decorator applies
// them: the overlays neither being deleted nor marked
// ValidationSucceeded=False for their generation, evaluated (precedence,
// conflicts) and applied per NodePool by overlay.Evaluate and overlay.Apply.
// Build it with OverlayInstanceTypes.
type Overlaid struct {
	types   []*cloudprovider.InstanceType
	byName  map[string]*cloudprovider.InstanceType
	pools   map[string]*overlaidPool
	unowned *overlaidPool
	uses    []OverlayUse
}

// overlaidPool is the outcome of overlay.Apply for one NodePool, with the
// instance types it changed by name.
type overlaidPool struct {
	result  overlay.Result
	changed map[string]*cloudprovider.InstanceType
}

// OverlayInstanceTypes applies the NodeOverlays of o to types for every
// NodePool of o. types is not modified; without overlays every NodePool
// is offered types as they are.
func OverlayInstanceTypes(o *Objects, types []*cloudprovider.InstanceType) *Overlaid {
	x := &Overlaid{types: types, pools: map[string]*overlaidPool{}, byName: make(map[string]*cloudprovider.InstanceType, len(types))}
	for _, it := range types {
		x.byName[it.Name] = it
	}
	if len(o.NodeOverlays) == 0 {
		return x
	}
	var parsed []overlay.Overlay
	uses := map[string]*OverlayUse{}
	for _, no := range o.NodeOverlays {
		use := &OverlayUse{Name: no.Name}
		uses[no.Name] = use
		switch cond := meta.FindStatusCondition(no.Status.Conditions, v1alpha1.ConditionTypeValidationSucceeded); {
		case no.DeletionTimestamp != nil:
			use.NotApplied = "being deleted"
		case overlay.Skipped(no):
			use.NotApplied = fmt.Sprintf("ValidationSucceeded=False (%s): %s", cond.Reason, cond.Message)
		default:
			p, err := overlay.Parse(no)
			if err != nil {
				// Only a cluster read through its API server gets here:
				// Load refuses such an overlay.
				use.NotApplied = err.Error()
				continue
			}
			parsed = append(parsed, p)
		}
	}
	for _, np := range o.NodePools {
		ev := overlay.Evaluate([]overlay.Pool{{NodePool: np, InstanceTypes: types}}, parsed)
		x.pools[np.Name] = newOverlaidPool(overlay.Apply(np, types, ev.Applied), types)
		for _, name := range slices.Sorted(maps.Keys(ev.Conflicts)) {
			use := uses[name]
			use.NotApplied = joinNonEmpty(use.NotApplied, ev.Conflicts[name].Message())
		}
		// The pool is offered every type; it applies where the pool's
		// requirements admit the type.
		admitted := types
		if reqs, err := requirements.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements); err == nil {
			admitted = slices.DeleteFunc(slices.Clone(types), func(it *cloudprovider.InstanceType) bool { return it.Requirements.Intersects(reqs) != nil })
		}
		for _, ov := range ev.Applied {
			if slices.ContainsFunc(admitted, func(it *cloudprovider.InstanceType) bool {
				return len(overlay.Matching(np, it, ov.Requirements)) > 0
			}) {
				uses[ov.Name].NodePools = append(uses[ov.Name].NodePools, np.Name)
			}
		}
	}
	// A node of no NodePool of o (another autoscaler's, or of a deleted
	// NodePool) is priced as if a NodePool without name or labels owned it.
	none := &v1.NodePool{}
	x.unowned = newOverlaidPool(overlay.Apply(none, types,
		overlay.Evaluate([]overlay.Pool{{NodePool: none, InstanceTypes: types}}, parsed).Applied), types)
	for _, no := range o.NodeOverlays {
		x.uses = append(x.uses, *uses[no.Name])
	}
	slices.SortStableFunc(x.uses, func(a, b OverlayUse) int { return strings.Compare(a.Name, b.Name) })
	return x
}

func newOverlaidPool(res overlay.Result, types []*cloudprovider.InstanceType) *overlaidPool {
	p := &overlaidPool{result: res, changed: map[string]*cloudprovider.InstanceType{}}
	for i, it := range res.InstanceTypes {
		if it != types[i] {
			p.changed[it.Name] = it
		}
	}
	return p
}

// pool returns the overlaid types of a NodePool, or those of a node of no
// known NodePool; nil without overlays.
func (x *Overlaid) pool(nodePool string) *overlaidPool {
	if p, ok := x.pools[nodePool]; ok {
		return p
	}
	return x.unowned
}

// InstanceTypes returns the instance types a NodePool of the cluster is
// offered, overlaid.
func (x *Overlaid) InstanceTypes(nodePool string) []*cloudprovider.InstanceType {
	if p := x.pool(nodePool); p != nil {
		return p.result.InstanceTypes
	}
	return x.types
}

// InstanceType returns the instance type of that name as a NodePool is
// offered it, overlaid; nil when the types have none of that name.
func (x *Overlaid) InstanceType(nodePool, name string) *cloudprovider.InstanceType {
	if p := x.pool(nodePool); p != nil {
		if it, ok := p.changed[name]; ok {
			return it
		}
	}
	return x.byName[name]
}

// PriceOverlaid reports whether a NodeOverlay changed the price of the
// offering (zone and capacity type) of the instance type a NodePool is
// offered.
func (x *Overlaid) PriceOverlaid(nodePool, instanceType, zone, capacityType string) bool {
	p := x.pool(nodePool)
	if p == nil || !p.result.PriceOverlaid[instanceType] {
		return false
	}
	it, orig := p.changed[instanceType], x.byName[instanceType]
	if it == nil || orig == nil {
		return false
	}
	for i, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType && i < len(orig.Offerings) && orig.Offerings[i].Price != o.Price {
			return true
		}
	}
	return false
}

// Uses lists the cluster's NodeOverlays by name with where they apply and
// why not; empty without overlays.
func (x *Overlaid) Uses() []OverlayUse { return slices.Clone(x.uses) }

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// OverlaysLine describes the NodeOverlays of a simulation for people (the
// ones applied, by NodePool, and the ones not applied, with why), and the
// marker that flags the prices they set when the tables mark them
// (marked); "" without overlays.
func OverlaysLine(uses []OverlayUse, marked bool) string {
	if len(uses) == 0 {
		return ""
	}
	var applied, skipped []string
	for _, u := range uses {
		if len(u.NodePools) > 0 {
			applied = append(applied, fmt.Sprintf("%s (NodePool %s)", u.Name, strings.Join(u.NodePools, ", ")))
		}
		switch {
		case u.NotApplied != "":
			skipped = append(skipped, fmt.Sprintf("%s (%s)", u.Name, u.NotApplied))
		case len(u.NodePools) == 0:
			skipped = append(skipped, fmt.Sprintf("%s (matches no instance type of any NodePool)", u.Name))
		}
	}
	var b strings.Builder
	if len(applied) > 0 {
		fmt.Fprintf(&b, "NodeOverlays applied: %s", strings.Join(applied, ", "))
		if marked {
			fmt.Fprintf(&b, "; a price one set is marked %s", overlaidMark)
		}
		b.WriteString(".")
	}
	if len(skipped) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "NodeOverlays not applied: %s.", strings.Join(skipped, ", "))
	}
	return b.String()
}

// overlaidMark follows a price a NodeOverlay set in the tables.
const overlaidMark = "*"

// priceCell is a table's $/h cell: the price, marked when overlaid.
func priceCell(price float64, overlaid bool) string {
	if overlaid {
		return fmt.Sprintf("%.4f%s", price, overlaidMark)
	}
	return fmt.Sprintf("%.4f", price)
}
