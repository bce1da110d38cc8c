package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// LiveComparison is what `dovetail simulate --against-live` reports: the
// nodes the cluster runs now and their price, beside the nodes a fresh
// Dovetail plan would run for the same pods, and the difference. It is
// what a shadow Dovetail beside another autoscaler would have done, had it
// placed every pod from scratch.
type LiveComparison struct {
	// Note says where the instance types and prices come from.
	Note string `json:"note"`
	// Overlays are the NodeOverlays of Dovetail's side (the cluster's and
	// those given with -f), where they apply and why not. The live nodes
	// are priced with the cluster's own NodeOverlays, as their NodePool is
	// offered them (a node of no NodePool as by a NodePool without name or
	// labels).
	Overlays []whatif.OverlayUse `json:"overlays,omitempty"`
	// Live is the cluster's nodes now (control-plane nodes left out).
	Live Fleet `json:"live"`
	// Dovetail is the fresh plan's NodeClaims.
	Dovetail Fleet `json:"dovetail"`
	// Pods counts the pods the fresh plan had to place: every pod of the
	// live nodes but DaemonSet and mirror pods, and the pending pods.
	Pods int `json:"pods"`
	// Unschedulable are the pods the fresh plan could place nowhere (their
	// nodes' price is then missing from Dovetail's side).
	Unschedulable []whatif.PodReason `json:"unschedulable,omitempty"`
	// NodesDelta and PriceDeltaPerHour are Dovetail's minus the live ones;
	// PriceDeltaPercent is relative to the live price (0 when it is 0).
	NodesDelta        int     `json:"nodesDelta"`
	PriceDeltaPerHour float64 `json:"priceDeltaPerHour"`
	PriceDeltaPercent float64 `json:"priceDeltaPercent"`
}

// Fleet is a set of nodes and their hourly price.
type Fleet struct {
	Nodes        int     `json:"nodes"`
	PricePerHour float64 `json:"pricePerHour"`
	// Unpriced counts the nodes whose offering the catalog does not price.
	Unpriced int          `json:"unpricedNodes,omitempty"`
	Groups   []FleetGroup `json:"groups"`
}

// FleetGroup is the nodes of one NodePool, instance type and capacity type.
type FleetGroup struct {
	// NodePool is "" for nodes no NodePool owns (another autoscaler's).
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Nodes        int     `json:"nodes"`
	PricePerHour float64 `json:"pricePerHour"`
}

// errAgainstLiveFlags is returned for flags --against-live cannot honour.
var errAgainstLiveFlags = errors.New("--against-live compares the live cluster (from --kubeconfig) with a fresh plan for its pods")

// validateAgainstLive rejects the flags that make no sense with --against-live.
func (o *SimulateOptions) validateAgainstLive() error {
	switch {
	case o.Snapshot != "":
		return fmt.Errorf("%w: it cannot be used with --snapshot (simulate a snapshot without --against-live)", errAgainstLiveFlags)
	case len(o.RemoveNodes) > 0:
		return fmt.Errorf("%w: it cannot be used with --remove-node (the fresh plan already removes every node)", errAgainstLiveFlags)
	case len(o.Scale) > 0:
		return fmt.Errorf("%w: it cannot be used with --scale (give the changed Deployment with -f)", errAgainstLiveFlags)
	}
	return nil
}

// CompareWithLive computes the comparison: the live fleet from objs, and a
// fresh plan that removes every node and NodeClaim (control-plane nodes
// excepted), applies the manifests (may be nil) and places every pod.
func CompareWithLive(objs *whatif.Objects, manifests *whatif.Objects, now time.Time) (*LiveComparison, error) {
	types, err := whatif.CatalogInstanceTypes()
	if err != nil {
		return nil, err
	}
	overlaid := whatif.OverlayInstanceTypes(objs, types)
	out := &LiveComparison{Note: whatif.InstanceTypesNote}
	changes := whatif.Changes{Manifests: manifests}
	live := map[FleetGroup]*FleetGroup{}
	for _, n := range objs.Nodes {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; cp {
			continue
		}
		changes.RemoveNodes = append(changes.RemoveNodes, n.Name)
		key := FleetGroup{NodePool: n.Labels[v1.NodePoolLabelKey], InstanceType: n.Labels[corev1.LabelInstanceTypeStable], CapacityType: capacityTypeOf(n.Labels)}
		g := live[key]
		if g == nil {
			g = &FleetGroup{NodePool: key.NodePool, InstanceType: key.InstanceType, CapacityType: key.CapacityType}
			live[key] = g
		}
		g.Nodes++
		out.Live.Nodes++
		if price, ok := priceOf(overlaid.InstanceType(key.NodePool, key.InstanceType), n.Labels[corev1.LabelTopologyZone], key.CapacityType); ok {
			g.PricePerHour += price
			out.Live.PricePerHour += price
		} else {
			out.Live.Unpriced++
		}
	}
	// In-flight NodeClaims (no Node yet) go too: the plan starts from nothing.
	for _, nc := range objs.NodeClaims {
		if objs.NodeOfClaim(nc) == nil {
			changes.RemoveNodes = append(changes.RemoveNodes, nc.Name)
		}
	}
	out.Live.Groups = sortedGroups(live)
	fresh, err := whatif.Apply(objs, changes)
	if err != nil {
		return nil, err
	}
	res, err := whatif.Simulate(fresh, whatif.Options{Now: now, InstanceTypes: types})
	if err != nil {
		return nil, err
	}
	planned := map[FleetGroup]*FleetGroup{}
	for _, l := range res.Launches {
		key := FleetGroup{NodePool: l.NodePool, InstanceType: l.InstanceType, CapacityType: l.CapacityType}
		g := planned[key]
		if g == nil {
			g = &FleetGroup{NodePool: key.NodePool, InstanceType: key.InstanceType, CapacityType: key.CapacityType}
			planned[key] = g
		}
		g.Nodes++
		g.PricePerHour += l.Price
		out.Dovetail.Nodes++
		out.Dovetail.PricePerHour += l.Price
	}
	out.Dovetail.Groups = sortedGroups(planned)
	out.Pods, out.Unschedulable, out.Overlays = res.PendingPods, res.Unschedulable, res.Overlays
	out.NodesDelta = out.Dovetail.Nodes - out.Live.Nodes
	out.PriceDeltaPerHour = out.Dovetail.PricePerHour - out.Live.PricePerHour
	if out.Live.PricePerHour > 0 {
		out.PriceDeltaPercent = 100 * out.PriceDeltaPerHour / out.Live.PricePerHour
	}
	return out, nil
}

// capacityTypeOf reads a node's capacity type from Karpenter's label or,
// for EKS managed node groups (the Cluster Autoscaler's), from EKS's;
// on-demand when neither says.
func capacityTypeOf(labels map[string]string) string {
	if ct := labels[v1.CapacityTypeLabelKey]; ct != "" {
		return ct
	}
	if strings.EqualFold(labels["eks.amazonaws.com/capacityType"], "SPOT") {
		return v1.CapacityTypeSpot
	}
	return v1.CapacityTypeOnDemand
}

// priceOf is the catalog price of an instance type's offering in the zone
// (any zone when empty) and capacity type.
func priceOf(it *cloudprovider.InstanceType, zone, capacityType string) (float64, bool) {
	if it == nil {
		return 0, false
	}
	var best float64
	found := false
	for _, o := range it.Offerings {
		if o.CapacityType != capacityType || (zone != "" && o.Zone != zone) {
			continue
		}
		if !found || o.Price < best {
			best, found = o.Price, true
		}
	}
	return best, found
}

func sortedGroups(m map[FleetGroup]*FleetGroup) []FleetGroup {
	out := make([]FleetGroup, 0, len(m))
	for _, g := range m {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b FleetGroup) int {
		return cmp.Or(cmp.Compare(a.NodePool, b.NodePool), cmp.Compare(a.InstanceType, b.InstanceType), cmp.Compare(a.CapacityType, b.CapacityType))
	})
	return out
}

// WriteLiveComparison writes the comparison as tables.
func WriteLiveComparison(w io.Writer, c *LiveComparison) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	fleet := func(title string, f Fleet) {
		p("%s: %d node(s), $%.4f/h", title, f.Nodes, f.PricePerHour)
		if f.Unpriced > 0 {
			p("  (%d node(s) not priced by the catalog)", f.Unpriced)
		}
		if len(f.Groups) > 0 {
			p("  NODEPOOL\tINSTANCE TYPE\tCAPACITY\tNODES\t$/H")
			for _, g := range f.Groups {
				p("  %s\t%s\t%s\t%d\t%.4f", orNone(g.NodePool), orNone(g.InstanceType), g.CapacityType, g.Nodes, g.PricePerHour)
			}
		}
		p("")
	}
	fleet("Live cluster now", c.Live)
	fleet("Dovetail would run", c.Dovetail)
	p("Difference: %+d node(s), %+.4f $/h (%+.1f%%), for %d pod(s)", c.NodesDelta, c.PriceDeltaPerHour, c.PriceDeltaPercent, c.Pods)
	if len(c.Unschedulable) > 0 {
		p("Dovetail could not place %d pod(s) (not counted on its side):", len(c.Unschedulable))
		for _, u := range c.Unschedulable {
			p("  %s\t%s", u.Pod, u.Reason)
		}
	}
	p("Note: %s", c.Note)
	if line := whatif.OverlaysLine(c.Overlays, false); line != "" {
		p("%s", line)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the comparison: %w", err)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
