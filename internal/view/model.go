package view

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// HoursPerMonth turns an hourly price into a monthly one (365 × 24 / 12).
const HoursPerMonth = 730

// Unmanaged is the group of nodes that no NodePool owns.
const Unmanaged = "(unmanaged)"

// Objects are what the view reads from a cluster.
type Objects struct {
	Nodes      []*corev1.Node
	NodeClaims []*v1.NodeClaim
	NodePools  []*v1.NodePool
	Pods       []*corev1.Pod
	// PDBs are read for the pods they keep from being evicted.
	PDBs []*policyv1.PodDisruptionBudget
}

// Row is one node, or one NodeClaim whose node has not registered yet.
type Row struct {
	// NodePool owns the node; Unmanaged when no NodePool does.
	NodePool string
	// Name is the node's name, or the NodeClaim's while it is in flight.
	Name string
	// NodeClaim is the claim of the node, empty for an unmanaged node.
	NodeClaim string
	// InFlight is true for a NodeClaim without a registered Node.
	InFlight bool
	// Status is Ready, NotReady, Launching or Registering.
	Status string
	// InstanceType, Zone and CapacityType come from the labels.
	InstanceType, Zone, CapacityType string
	// Price is the hourly price of the offering; Priced is false when the
	// price source does not know it.
	Price  float64
	Priced bool
	// CPURequested and CPUAllocatable are millicores; MemoryRequested and
	// MemoryAllocatable bytes. Requested sums the node's running pods.
	CPURequested, CPUAllocatable       int64
	MemoryRequested, MemoryAllocatable int64
	// Pods counts the pods bound to the node that have not finished.
	Pods int
	// Created is when the node (or the in-flight claim) was created.
	Created time.Time
	// Disruption lists the disruption state: drifted, expired,
	// consolidatable, disrupting (and why), deleting, blocked (and why).
	Disruption []string
}

// CPUUtilisation is requested over allocatable CPU, 0 without allocatable.
func (r Row) CPUUtilisation() float64 { return ratio(r.CPURequested, r.CPUAllocatable) }

// MemoryUtilisation is requested over allocatable memory.
func (r Row) MemoryUtilisation() float64 { return ratio(r.MemoryRequested, r.MemoryAllocatable) }

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Totals sum the rows of a cluster.
type Totals struct {
	// Nodes counts registered nodes, InFlight NodeClaims without a node.
	Nodes, InFlight int
	// PricePerHour sums the priced rows; Unpriced counts the others.
	PricePerHour float64
	Unpriced     int
	// Pods counts pods bound to nodes.
	Pods int
	// CPU in millicores and memory in bytes, over registered nodes.
	CPURequested, CPUAllocatable       int64
	MemoryRequested, MemoryAllocatable int64
}

// PricePerMonth is the hourly price times HoursPerMonth.
func (t Totals) PricePerMonth() float64 { return t.PricePerHour * HoursPerMonth }

func (t *Totals) add(r Row) {
	if r.InFlight {
		t.InFlight++
	} else {
		t.Nodes++
		t.CPURequested += r.CPURequested
		t.CPUAllocatable += r.CPUAllocatable
		t.MemoryRequested += r.MemoryRequested
		t.MemoryAllocatable += r.MemoryAllocatable
	}
	if r.Priced {
		t.PricePerHour += r.Price
	} else {
		t.Unpriced++
	}
	t.Pods += r.Pods
}

// Group is the rows of one NodePool with their subtotals.
type Group struct {
	NodePool string
	Rows     []Row
	Totals   Totals
}

// Table is the whole view: groups in NodePool name order (Unmanaged
// last), and the totals of the whole cluster, whatever the filter.
type Table struct {
	Groups []Group
	Totals Totals
	// NodePools names every group of the cluster, for the filter key.
	NodePools []string
}

// SortKey orders the rows of a group.
type SortKey int

// The sort keys, in the order the s key cycles through them.
const (
	SortByName SortKey = iota
	SortByPrice
	SortByCPU
	SortByMemory
	SortByAge
)

// String names the key as the header shows it.
func (k SortKey) String() string {
	switch k {
	case SortByPrice:
		return "$/h"
	case SortByCPU:
		return "cpu"
	case SortByMemory:
		return "memory"
	case SortByAge:
		return "age"
	default:
		return "name"
	}
}

// Next is the key after k, back to SortByName after SortByAge.
func (k SortKey) Next() SortKey { return (k + 1) % (SortByAge + 1) }

// Options shape a Table.
type Options struct {
	// Now is the moment ages and do-not-disrupt durations are taken at.
	Now time.Time
	// Prices prices the offerings; nil prices nothing.
	Prices Prices
	// Sort orders each group's rows: by name ascending, by price and
	// utilisation descending, by age oldest first.
	Sort SortKey
	// NodePool, when set, keeps only that group.
	NodePool string

	// Filled by Build from the objects: the PDBs, the NodePools by name
	// and how many nodes each has, for the blocked-and-why column.
	pdbs      []*policyv1.PodDisruptionBudget
	pools     map[string]*v1.NodePool
	poolNodes map[string]int
}

// Build turns the objects into a Table.
func Build(objs Objects, o Options) Table {
	o.pdbs = objs.PDBs
	o.pools = map[string]*v1.NodePool{}
	for _, np := range objs.NodePools {
		o.pools[np.Name] = np
	}
	o.poolNodes = map[string]int{}
	for _, n := range objs.Nodes {
		if pool := n.Labels[v1.NodePoolLabelKey]; pool != "" {
			o.poolNodes[pool]++
		}
	}
	podsByNode := map[string][]*corev1.Pod{}
	for _, p := range objs.Pods {
		if p.Spec.NodeName == "" || podutil.IsTerminal(p) {
			continue
		}
		podsByNode[p.Spec.NodeName] = append(podsByNode[p.Spec.NodeName], p)
	}
	claimByNode := map[string]*v1.NodeClaim{}
	claimByProvider := map[string]*v1.NodeClaim{}
	for _, nc := range objs.NodeClaims {
		if nc.Status.NodeName != "" {
			claimByNode[nc.Status.NodeName] = nc
		}
		if nc.Status.ProviderID != "" {
			claimByProvider[nc.Status.ProviderID] = nc
		}
	}
	var rows []Row
	seenClaims := map[string]bool{}
	for _, n := range objs.Nodes {
		nc := claimByNode[n.Name]
		if nc == nil && n.Spec.ProviderID != "" {
			nc = claimByProvider[n.Spec.ProviderID]
		}
		if nc != nil {
			seenClaims[nc.Name] = true
		}
		rows = append(rows, nodeRow(n, nc, podsByNode[n.Name], o))
	}
	for _, nc := range objs.NodeClaims {
		if !seenClaims[nc.Name] {
			rows = append(rows, claimRow(nc, o))
		}
	}

	t := Table{}
	groups := map[string]*Group{}
	for _, r := range rows {
		t.Totals.add(r)
		g := groups[r.NodePool]
		if g == nil {
			g = &Group{NodePool: r.NodePool}
			groups[r.NodePool] = g
		}
		g.Rows = append(g.Rows, r)
		g.Totals.add(r)
	}
	for _, np := range objs.NodePools {
		if groups[np.Name] == nil {
			groups[np.Name] = &Group{NodePool: np.Name}
		}
	}
	for name := range groups {
		t.NodePools = append(t.NodePools, name)
	}
	sort.Slice(t.NodePools, func(i, j int) bool {
		a, b := t.NodePools[i], t.NodePools[j]
		if (a == Unmanaged) != (b == Unmanaged) {
			return b == Unmanaged
		}
		return a < b
	})
	for _, name := range t.NodePools {
		if o.NodePool != "" && name != o.NodePool {
			continue
		}
		g := groups[name]
		sortRows(g.Rows, o.Sort)
		t.Groups = append(t.Groups, *g)
	}
	return t
}

func sortRows(rows []Row, key SortKey) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch key {
		case SortByPrice:
			if a.Price != b.Price {
				return a.Price > b.Price
			}
		case SortByCPU:
			if a.CPUUtilisation() != b.CPUUtilisation() {
				return a.CPUUtilisation() > b.CPUUtilisation()
			}
		case SortByMemory:
			if a.MemoryUtilisation() != b.MemoryUtilisation() {
				return a.MemoryUtilisation() > b.MemoryUtilisation()
			}
		case SortByAge:
			if !a.Created.Equal(b.Created) {
				return a.Created.Before(b.Created)
			}
		}
		return a.Name < b.Name
	})
}

func nodeRow(n *corev1.Node, nc *v1.NodeClaim, pods []*corev1.Pod, o Options) Row {
	r := Row{
		NodePool:          n.Labels[v1.NodePoolLabelKey],
		Name:              n.Name,
		InstanceType:      n.Labels[corev1.LabelInstanceTypeStable],
		Zone:              n.Labels[corev1.LabelTopologyZone],
		CapacityType:      n.Labels[v1.CapacityTypeLabelKey],
		CPUAllocatable:    n.Status.Allocatable.Cpu().MilliValue(),
		MemoryAllocatable: n.Status.Allocatable.Memory().Value(),
		Pods:              len(pods),
		Created:           n.CreationTimestamp.Time,
		Status:            "NotReady",
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			r.Status = "Ready"
		}
	}
	if nc != nil {
		r.NodeClaim = nc.Name
		if r.NodePool == "" {
			r.NodePool = nc.Labels[v1.NodePoolLabelKey]
		}
		r.Disruption = claimDisruption(nc)
	}
	if r.NodePool == "" {
		r.NodePool = Unmanaged
	}
	for _, p := range pods {
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		r.CPURequested += req.Cpu().MilliValue()
		r.MemoryRequested += req.Memory().Value()
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == v1.DisruptedTaintKey && !contains(r.Disruption, "disrupting") {
			r.Disruption = append(r.Disruption, "disrupting")
		}
	}
	if n.DeletionTimestamp != nil && !contains(r.Disruption, "deleting") {
		r.Disruption = append(r.Disruption, "deleting")
	}
	if blocked := blockedBy(n, pods, o.Now); blocked != "" {
		r.Disruption = append(r.Disruption, "blocked: "+blocked)
	} else if blocked := blockedByPDB(pods, o.pdbs); blocked != "" {
		r.Disruption = append(r.Disruption, "blocked: "+blocked)
	} else if blocked := blockedByBudget(o.pools[r.NodePool], o.poolNodes[r.NodePool], o.Now); blocked != "" {
		r.Disruption = append(r.Disruption, "blocked: "+blocked)
	}
	r.Price, r.Priced = o.Prices.Price(r.InstanceType, r.Zone, r.CapacityType)
	return r
}

func claimRow(nc *v1.NodeClaim, o Options) Row {
	r := Row{
		NodePool:          nc.Labels[v1.NodePoolLabelKey],
		Name:              nc.Name,
		NodeClaim:         nc.Name,
		InFlight:          true,
		InstanceType:      nc.Labels[corev1.LabelInstanceTypeStable],
		Zone:              nc.Labels[corev1.LabelTopologyZone],
		CapacityType:      nc.Labels[v1.CapacityTypeLabelKey],
		CPUAllocatable:    nc.Status.Allocatable.Cpu().MilliValue(),
		MemoryAllocatable: nc.Status.Allocatable.Memory().Value(),
		Created:           nc.CreationTimestamp.Time,
		Status:            "Launching",
		Disruption:        claimDisruption(nc),
	}
	if r.NodePool == "" {
		r.NodePool = Unmanaged
	}
	if meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeLaunched) {
		r.Status = "Registering"
	}
	if r.InstanceType != "" {
		r.Price, r.Priced = o.Prices.Price(r.InstanceType, r.Zone, r.CapacityType)
	}
	return r
}

// claimDisruption reads the NodeClaim's disruption conditions.
func claimDisruption(nc *v1.NodeClaim) []string {
	var out []string
	conds := nc.Status.Conditions
	if meta.IsStatusConditionTrue(conds, v1.ConditionTypeDrifted) {
		out = append(out, "drifted")
	}
	if meta.IsStatusConditionTrue(conds, v1.ConditionTypeExpired) {
		out = append(out, "expired")
	}
	if meta.IsStatusConditionTrue(conds, v1.ConditionTypeConsolidatable) {
		out = append(out, "consolidatable")
	}
	if c := meta.FindStatusCondition(conds, v1.ConditionTypeDisruptionReason); c != nil && c.Status == metav1.ConditionTrue {
		out = append(out, "disrupting ("+c.Reason+")")
	} else if meta.IsStatusConditionTrue(conds, v1.ConditionTypeDisrupting) {
		out = append(out, "disrupting")
	}
	if nc.DeletionTimestamp != nil {
		out = append(out, "deleting")
	}
	return out
}

// blockedBy says what blocks voluntary disruption of the node: its own
// do-not-disrupt annotation or its pods' (read with Karpenter's semantics
// at now); empty when nothing does.
func blockedBy(n *corev1.Node, pods []*corev1.Pod, now time.Time) string {
	if n.Annotations[v1.DoNotDisruptAnnotationKey] == "true" {
		return "node do-not-disrupt"
	}
	var names []string
	for _, p := range pods {
		if podutil.DoNotDisrupt(p, now).Active {
			names = append(names, p.Namespace+"/"+p.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	s := "do-not-disrupt pod " + names[0]
	if len(names) > 1 {
		s += fmt.Sprintf(" (+%d more)", len(names)-1)
	}
	return s
}

// blockedByPDB names a PodDisruptionBudget that allows no eviction now of
// one of the node's pods (daemon and mirror pods are not evicted); empty
// when none does.
func blockedByPDB(pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) string {
	for _, pdb := range pdbs {
		if pdb.Status.DisruptionsAllowed > 0 || pdb.Spec.Selector == nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || selector.Empty() {
			continue
		}
		for _, p := range pods {
			if p.Namespace != pdb.Namespace || podutil.IsOwnedByDaemonSet(p) || podutil.IsMirror(p) || !selector.Matches(k8slabels.Set(p.Labels)) {
				continue
			}
			return fmt.Sprintf("PDB %s/%s allows no eviction (pod %s)", pdb.Namespace, pdb.Name, p.Name)
		}
	}
	return ""
}

// blockedByBudget says when the NodePool's disruption budgets allow no
// node to go now for any reason (empty, drifted or underutilized); empty
// when one reason is allowed.
func blockedByBudget(np *v1.NodePool, nodes int, now time.Time) string {
	if np == nil {
		return ""
	}
	for _, reason := range []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized} {
		if limit, err := disruption.BudgetLimit(np, reason, now, nodes); err != nil || limit > 0 {
			return ""
		}
	}
	return "NodePool " + np.Name + "'s budgets allow no disruption now"
}

func contains(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
