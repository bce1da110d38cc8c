package whatif

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// NotFoundError is an object Explain was asked about that does not exist.
type NotFoundError struct{ Kind, Name string }

// Error implements error.
func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %s not found", e.Kind, e.Name) }

// Explanation says why Dovetail does what it does about one object.
type Explanation struct {
	// Object is "pod shop/web-0", "node ip-10-0-1-7", ...
	Object string `json:"object"`
	// Summary is the answer in one sentence.
	Summary string `json:"summary"`
	// Overlays are the cluster's NodeOverlays, where they apply and why
	// not; the prices and resources explained are the overlaid ones.
	Overlays []OverlayUse `json:"overlays,omitempty"`
	// Event is the message of the event the controllers publish for this
	// case, when there is one.
	Event string `json:"event,omitempty"`
	// NodePools says, for a pending pod, what each NodePool can do for it.
	NodePools []PoolVerdict `json:"nodePools,omitempty"`
	// InstanceType says why a node or NodeClaim has its type.
	InstanceType *TypeChoice `json:"instanceType,omitempty"`
	// Disruption says why a node is, or is not, being disrupted.
	Disruption *DisruptionVerdict `json:"disruption,omitempty"`
	// Budgets are a NodePool's disruption budgets now and when they change.
	Budgets []BudgetWindow `json:"budgets,omitempty"`
	// Allowed is, for a NodePool, how many nodes each reason may disrupt now.
	Allowed []Budget `json:"allowed,omitempty"`
}

// PoolVerdict is what one NodePool can do for a pending pod.
type PoolVerdict struct {
	NodePool string `json:"nodePool"`
	Weight   int32  `json:"weight"`
	CanServe bool   `json:"canServe"`
	// Reason is the simulator's reason (or the readiness condition's).
	Reason string `json:"reason"`
	// Closest is, when no instance type is large enough, the one that
	// comes closest and what it lacks.
	Closest string `json:"closest,omitempty"`
	// Limit is set when spec.limits, not the instance types, keep every
	// type that would fit the pod out.
	Limit string `json:"limit,omitempty"`
}

// TypeChoice is a node's instance type and the options it beat.
type TypeChoice struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"pricePerHour"`
	// PriceOverlaid is set when a NodeOverlay set that price.
	PriceOverlaid bool          `json:"priceOverlaid,omitempty"`
	Reason        string        `json:"reason"`
	Alternatives  []Alternative `json:"alternatives,omitempty"`
}

// Alternative is an instance-type option of a NodeClaim with its cheapest
// offering the claim allows.
type Alternative struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	Price        float64 `json:"pricePerHour"`
	// PriceOverlaid is set when a NodeOverlay set that price.
	PriceOverlaid bool `json:"priceOverlaid,omitempty"`
	Available     bool `json:"available"`
}

// DisruptionVerdict says whether a node would be disrupted now and why not.
type DisruptionVerdict struct {
	Disrupted bool     `json:"disrupted"`
	Reasons   []string `json:"reasons"`
}

// BudgetWindow is one disruption budget of a NodePool.
type BudgetWindow struct {
	Reasons  string `json:"reasons"`
	Nodes    string `json:"nodes"`
	Schedule string `json:"schedule,omitempty"`
	Duration string `json:"duration,omitempty"`
	Active   bool   `json:"active"`
	// Allows is how many nodes the budget allows out of the pool's nodes.
	Allows int `json:"allows"`
	// Change says when the budget becomes active or inactive next.
	Change string `json:"change"`
}

// Explain answers "why?" for a pod, node, nodeclaim or nodepool of the
// objects, at opts.Now.
func Explain(o *Objects, kind, namespace, name string, opts Options) (*Explanation, error) {
	types := opts.InstanceTypes
	if types == nil {
		var err error
		if types, err = CatalogInstanceTypes(); err != nil {
			return nil, err
		}
	}
	m := newModel(o, opts.Now, types)
	e, err := m.explain(kind, namespace, name, opts)
	if err != nil {
		return nil, err
	}
	e.Overlays = m.over.Uses()
	return e, nil
}

// explain dispatches Explain by kind.
func (m *model) explain(kind, namespace, name string, opts Options) (*Explanation, error) {
	o := m.objs
	switch kind {
	case "pod", "pods", "po":
		return m.explainPod(namespace, name, opts)
	case "node", "nodes", "no":
		n := o.Node(name)
		if n == nil {
			return nil, &NotFoundError{Kind: "node", Name: name}
		}
		e := &Explanation{Object: "node " + name}
		nc := o.NodeClaimOfNode(n)
		if nc == nil {
			e.Summary = "Node has no NodeClaim: Dovetail does not manage it and never disrupts it"
			return e, nil
		}
		m.explainMachine(e, n, nc, opts)
		return e, nil
	case "nodeclaim", "nodeclaims":
		nc := o.NodeClaim(name)
		if nc == nil {
			return nil, &NotFoundError{Kind: "nodeclaim", Name: name}
		}
		e := &Explanation{Object: "nodeclaim " + name}
		m.explainMachine(e, o.NodeOfClaim(nc), nc, opts)
		return e, nil
	case "nodepool", "nodepools":
		np := o.NodePool(name)
		if np == nil {
			return nil, &NotFoundError{Kind: "nodepool", Name: name}
		}
		return m.explainPool(np, opts)
	}
	return nil, fmt.Errorf("cannot explain %q: want pod, node, nodeclaim or nodepool", kind)
}

func (m *model) explainPod(namespace, name string, opts Options) (*Explanation, error) {
	pod := m.objs.Pod(namespace, name)
	if pod == nil {
		return nil, &NotFoundError{Kind: "pod", Name: namespace + "/" + name}
	}
	e := &Explanation{Object: "pod " + namespace + "/" + name}
	switch {
	case pod.Spec.NodeName != "":
		e.Summary = fmt.Sprintf("Pod is bound to node %s", pod.Spec.NodeName)
		if n := m.objs.Node(pod.Spec.NodeName); n != nil && n.Labels[v1.NodePoolLabelKey] != "" {
			e.Summary += fmt.Sprintf(" of NodePool %s (%s)", n.Labels[v1.NodePoolLabelKey], n.Labels[corev1.LabelInstanceTypeStable])
		}
		return e, nil
	case podutil.IsTerminal(pod):
		e.Summary = "Pod has finished (" + string(pod.Status.Phase) + ")"
		return e, nil
	case podutil.IsOwnedByDaemonSet(pod):
		e.Summary = "Pod belongs to a DaemonSet: Dovetail sizes nodes for it but launches none for it"
		return e, nil
	}
	if !slices.Contains(m.pending, pod) {
		e.Summary = "Pod waits for a node it is nominated to: " + pod.Status.NominatedNodeName
		return e, nil
	}
	// 1. What provisioning would do now, with every pending pod.
	plan := simulator.Simulate(m.snapshot(m.pending, m.ready), opts.Simulator)
	e.Summary = m.planFor(pod, plan)
	for _, u := range plan.Unschedulable {
		if u.Pod == pod {
			e.Event = provisioning.FailedSchedulingMessage(u.Reason)
		}
	}
	// 2. Each NodePool on its own, for this pod alone.
	for _, p := range m.pools {
		np := p.NodePool
		v := PoolVerdict{NodePool: np.Name, Weight: weight(np)}
		if why := m.notReady[np.Name] + m.static[np.Name]; why != "" {
			v.Reason = why
			e.NodePools = append(e.NodePools, v)
			continue
		}
		alone := simulator.Simulate(m.snapshot([]*corev1.Pod{pod}, []simulator.NodePool{p}), opts.Simulator)
		switch {
		case len(alone.NewNodeClaims) > 0:
			l := m.launchOf(alone.NewNodeClaims[0])
			v.CanServe = true
			v.Reason = fmt.Sprintf("would launch %s (%s, %s, $%.4f/h%s) of %d option(s)", l.InstanceType, l.Zone, l.CapacityType, l.Price,
				overlaidNote(l.PriceOverlaid), l.Options)
		case len(alone.Placements) > 0:
			v.CanServe = true
			v.Reason = "fits on existing node " + alone.Placements[0].Node
		case len(alone.Unschedulable) > 0:
			v.Reason = poolReason(alone.Unschedulable[0].Reason, np.Name)
			if strings.Contains(v.Reason, "no instance type has room for") {
				v.Closest = closest(pod, np, p.InstanceTypes)
				v.Limit = m.limitNote(pod, np, p.InstanceTypes)
			}
		}
		e.NodePools = append(e.NodePools, v)
	}
	slices.SortStableFunc(e.NodePools, func(a, b PoolVerdict) int { return cmp.Compare(b.Weight, a.Weight) })
	if len(m.objs.NodePools) == 0 {
		e.NodePools = nil
		e.Summary = ErrNoNodePool.Error()
	}
	return e, nil
}

// planFor says what a plan does with a pod.
func (m *model) planFor(pod *corev1.Pod, plan *simulator.Plan) string {
	for _, p := range plan.Placements {
		if p.Pod == pod {
			return fmt.Sprintf("Pod fits on existing node %s (the kube-scheduler should bind it; Dovetail nominates it there)", p.Node)
		}
	}
	for _, c := range plan.NewNodeClaims {
		if slices.Contains(c.Pods, pod) {
			l := m.launchOf(c)
			return fmt.Sprintf("Dovetail would launch a NodeClaim of NodePool %s for it: %s (%s, %s, $%.4f/h%s), with %d pod(s)",
				c.NodePool, l.InstanceType, l.Zone, l.CapacityType, l.Price, overlaidNote(l.PriceOverlaid), len(c.Pods))
		}
	}
	return "Pod cannot be placed: no existing node and no NodePool can take it (see each NodePool below)"
}

// poolReason keeps the part of a simulator reason that is about the pool.
func poolReason(reason, pool string) string {
	prefix := "nodepool " + pool + ": "
	if i := strings.Index(reason, prefix); i >= 0 {
		return reason[i+len(prefix):]
	}
	return reason
}

// closest names the instance type the pool allows that comes closest to
// the pod's requests (fewest resources short, then least short), and what
// it lacks. Daemonset overhead is not counted.
func closest(pod *corev1.Pod, np *v1.NodePool, types []*cloudprovider.InstanceType) string {
	reqs, err := requirements.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements)
	if err != nil {
		return ""
	}
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var best *cloudprovider.InstanceType
	bestShort, bestRatio := 0, 0.0
	for _, it := range types {
		if it.Requirements.Intersects(reqs) != nil {
			continue
		}
		alloc := it.Allocatable()
		short, ratio := 0, 0.0
		for name, q := range want {
			have := alloc[name]
			if have.Cmp(q) < 0 {
				short++
			}
			if q.MilliValue() > 0 {
				ratio += min(float64(have.MilliValue())/float64(q.MilliValue()), 1)
			}
		}
		if best == nil || short < bestShort || short == bestShort && ratio > bestRatio {
			best, bestShort, bestRatio = it, short, ratio
		}
	}
	if best == nil {
		return ""
	}
	alloc := best.Allocatable()
	var lacks []string
	for name, q := range want {
		have := alloc[name]
		if have.Cmp(q) < 0 {
			gap := q.DeepCopy()
			gap.Sub(have)
			lacks = append(lacks, fmt.Sprintf("%s %s (has %s, pod requests %s)", name, gap.String(), have.String(), q.String()))
		}
	}
	slices.Sort(lacks)
	return fmt.Sprintf("%s lacks %s", best.Name, strings.Join(lacks, ", "))
}

// explainMachine explains a node's instance type and its disruption.
func (m *model) explainMachine(e *Explanation, node *corev1.Node, nc *v1.NodeClaim, opts Options) {
	labels := nc.Labels
	if node != nil {
		labels = node.Labels
	}
	e.InstanceType = m.typeChoice(nc, labels)
	if node == nil {
		e.Summary = "NodeClaim is in flight (no Node yet): " + e.InstanceType.Reason
		return
	}
	e.Disruption = m.disruptionVerdict(node, nc, opts)
	e.Summary = e.Disruption.Reasons[0]
}

// typeChoice compares a claim's instance type with its other options.
func (m *model) typeChoice(nc *v1.NodeClaim, labels map[string]string) *TypeChoice {
	tc := &TypeChoice{InstanceType: labels[corev1.LabelInstanceTypeStable], Zone: labels[corev1.LabelTopologyZone], CapacityType: labels[v1.CapacityTypeLabelKey]}
	tc.Price, _ = m.price(labels)
	tc.PriceOverlaid = m.priceOverlaid(labels)
	pool := labels[v1.NodePoolLabelKey]
	reqs, err := requirements.FromNodePoolRequirements(nc.Spec.Requirements)
	if err != nil {
		tc.Reason = "the NodeClaim's requirements cannot be read: " + err.Error()
		return tc
	}
	var names []string
	if r, ok := reqs.Get(corev1.LabelInstanceTypeStable); ok && r.Finite() {
		names = r.Values()
	}
	for _, name := range names {
		it := m.over.InstanceType(pool, name)
		if it == nil {
			continue
		}
		best, ok := it.CheapestOffering(func(o cloudprovider.Offering) bool {
			if r, has := reqs.Get(corev1.LabelTopologyZone); has && !r.Has(o.Zone) {
				return false
			}
			if r, has := reqs.Get(v1.CapacityTypeLabelKey); has && !r.Has(o.CapacityType) {
				return false
			}
			return true
		})
		if name == tc.InstanceType {
			// The chosen option at the offering it runs on.
			best, ok = cloudprovider.Offering{Zone: tc.Zone, CapacityType: tc.CapacityType, Price: tc.Price}, true
		}
		tc.Alternatives = append(tc.Alternatives, Alternative{InstanceType: name, Zone: best.Zone, CapacityType: best.CapacityType, Price: best.Price,
			PriceOverlaid: ok && m.over.PriceOverlaid(pool, name, best.Zone, best.CapacityType), Available: ok})
	}
	slices.SortFunc(tc.Alternatives, func(a, b Alternative) int {
		return cmp.Or(cmp.Compare(boolRank(a.Available), boolRank(b.Available)), cmp.Compare(a.Price, b.Price), cmp.Compare(a.InstanceType, b.InstanceType))
	})
	cheaper := 0
	for _, a := range tc.Alternatives {
		if a.Available && a.Price < tc.Price-1e-9 {
			cheaper++
		}
	}
	switch {
	case len(tc.Alternatives) == 0:
		tc.Reason = fmt.Sprintf("%s is the only instance type the NodeClaim allows that the catalog knows", tc.InstanceType)
	case cheaper == 0:
		tc.Reason = fmt.Sprintf("%s in %s (%s) at $%.4f/h%s is the cheapest offering among the %d instance types that fit the pods it was launched for",
			tc.InstanceType, tc.Zone, tc.CapacityType, tc.Price, overlaidAside(tc.PriceOverlaid), len(tc.Alternatives))
	default:
		tc.Reason = fmt.Sprintf("%s at $%.4f/h%s was launched although %d of the %d options list a cheaper offering now "+
			"(an offering unavailable at launch, or the provider's allocation strategy)", tc.InstanceType, tc.Price, overlaidAside(tc.PriceOverlaid), cheaper, len(tc.Alternatives))
	}
	const shown = 8
	if len(tc.Alternatives) > shown {
		tc.Alternatives = tc.Alternatives[:shown]
	}
	return tc
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

// disruptionVerdict says why a node is or is not being disrupted, first
// from the decision the controller would take now, then by the checks the
// decision makes, one by one.
func (m *model) disruptionVerdict(node *corev1.Node, nc *v1.NodeClaim, opts Options) *DisruptionVerdict {
	v := &DisruptionVerdict{}
	in := m.disruptionInput()
	out := disruption.Decide(in, opts.Disruption)
	// 1. The decision itself.
	if cmd := out.Command; cmd != nil && slices.ContainsFunc(cmd.Candidates, func(c *disruption.Candidate) bool { return c.NodeClaim.Name == nc.Name }) {
		v.Disrupted = true
		v.Reasons = append(v.Reasons, "Dovetail would disrupt this node now: "+cmd.String())
		return v
	}
	// 2. A guard (do-not-disrupt, PDB, nomination, ...) or an earlier verdict.
	unconsolidatable := false
	for _, b := range out.Blocked {
		if b.NodeClaim != nil && b.NodeClaim.Name == nc.Name {
			v.Reasons = append(v.Reasons, b.Message)
			unconsolidatable = unconsolidatable || b.Reason == disruption.ReasonUnconsolidatable
		}
	}
	if len(v.Reasons) > 0 && !unconsolidatable {
		return v
	}
	np := m.objs.NodePool(nc.Labels[v1.NodePoolLabelKey])
	if np == nil {
		v.Reasons = append(v.Reasons, "NodePool "+nc.Labels[v1.NodePoolLabelKey]+" not found")
		return v
	}
	cands := disruption.Candidates(in, opts.Disruption)
	i := slices.IndexFunc(cands, func(c *disruption.Candidate) bool { return c.NodeClaim.Name == nc.Name })
	if i < 0 {
		v.Reasons = append(v.Reasons, "Node is no disruption candidate (not initialized, being deleted, or owned by a queued command)")
		return v
	}
	c := cands[i]
	found := len(v.Reasons)
	// 3. The consolidation policy and consolidateAfter.
	d := np.Spec.Disruption
	switch {
	case d.ConsolidateAfter.IsNever():
		v.Reasons = append(v.Reasons, fmt.Sprintf("NodePool %s has consolidateAfter: Never", np.Name))
	case !d.ConsolidationPolicy.ConsolidatesUnderutilized() && !c.Empty():
		v.Reasons = append(v.Reasons, fmt.Sprintf("NodePool %s consolidates only empty nodes (consolidationPolicy %s) and the node runs %d pod(s) that would move",
			np.Name, d.ConsolidationPolicy, len(c.Pods)))
	case !c.Consolidatable:
		at, _ := disruption.ConsolidatableAt(nc, np)
		v.Reasons = append(v.Reasons, fmt.Sprintf("consolidateAfter (%s) has not passed since the node's last pod event: consolidatable at %s, in %s",
			d.ConsolidateAfter, at.UTC().Format(time.RFC3339), at.Sub(m.now).Round(time.Second)))
	}
	// 4. The budget.
	reason := v1.DisruptionReasonUnderutilized
	if c.Empty() {
		reason = v1.DisruptionReasonEmpty
	}
	for _, b := range out.Budgets {
		if b.NodePool.Name == np.Name && b.Reason == reason && b.Allowed == 0 {
			v.Reasons = append(v.Reasons, disruption.BudgetBlockedMessage(reason))
		}
	}
	if len(v.Reasons) > found {
		return v
	}
	// 5. This node on its own: could its pods go elsewhere, more cheaply?
	for _, r := range m.alone(c, in, opts) {
		if !slices.Contains(v.Reasons, r) {
			v.Reasons = append(v.Reasons, r)
		}
	}
	return v
}

// alone decides on the node as the only candidate (every other machine
// stays), and reports the best placement of its pods with its $/h delta.
func (m *model) alone(c *disruption.Candidate, in disruption.Input, opts Options) []string {
	in.Replacements = map[string]bool{}
	for _, n := range in.Nodes {
		if n.NodeClaim != nil && n.NodeClaim.Name != c.NodeClaim.Name {
			in.Replacements[n.NodeClaim.Name] = true
		}
	}
	var out []string
	res := disruption.Decide(in, opts.Disruption)
	if res.Command != nil {
		out = append(out, "Dovetail would disrupt this node if it were the only candidate ("+res.Command.String()+"); this pass chose other nodes first")
	}
	for _, b := range res.Blocked {
		if b.NodeClaim != nil && b.NodeClaim.Name == c.NodeClaim.Name {
			out = append(out, b.Message)
		}
	}
	one := 1
	model := simulator.New(m.snapshot(m.pending, m.ready), opts.Simulator)
	plan := model.Solve(simulator.Request{Pods: append(append([]*corev1.Pod{}, m.pending...), c.Pods...), RemoveNodes: []string{c.Name()}, MaxNewNodeClaims: &one})
	moved := 0
	for _, p := range c.Pods {
		if !slices.ContainsFunc(plan.Unschedulable, func(u simulator.Unschedulable) bool { return u.Pod == p }) {
			moved++
		}
	}
	switch {
	case moved < len(c.Pods):
		out = append(out, fmt.Sprintf("best placement found: %d of the node's %d pod(s) fit elsewhere with at most one new node", moved, len(c.Pods)))
	case len(plan.NewNodeClaims) == 0:
		out = append(out, fmt.Sprintf("best placement found: the node's %d pod(s) fit on other nodes, saving $%.4f/h", len(c.Pods), c.Price))
	default:
		l := m.launchOf(plan.NewNodeClaims[0])
		out = append(out, fmt.Sprintf("best placement found: the node's pods fit with a new %s (%s, %s) at $%.4f/h instead of $%.4f/h: %+.4f $/h",
			l.InstanceType, l.Zone, l.CapacityType, l.Price, c.Price, l.Price-c.Price))
	}
	if len(out) == 0 {
		out = append(out, "Dovetail finds nothing to do for this node now")
	}
	return out
}

// explainPool reports a NodePool's readiness, budgets, and what they allow now.
func (m *model) explainPool(np *v1.NodePool, opts Options) (*Explanation, error) {
	e := &Explanation{Object: "nodepool " + np.Name}
	if why := m.notReady[np.Name]; why != "" {
		e.Summary = why
	} else {
		e.Summary = "NodePool is ready"
	}
	out := disruption.Decide(m.disruptionInput(), opts.Disruption)
	nodes := 0
	for _, b := range out.Budgets {
		if b.NodePool.Name != np.Name {
			continue
		}
		nodes = b.Nodes
		e.Allowed = append(e.Allowed, budgetOf(b))
		if b.Allowed == 0 {
			e.Event = disruption.BudgetBlockedMessage(b.Reason)
		}
	}
	budgets := np.Spec.Disruption.Budgets
	if budgets == nil {
		budgets = []v1.Budget{disruption.DefaultBudget()}
	}
	for _, b := range budgets {
		e.Budgets = append(e.Budgets, budgetWindow(b, m.now, nodes))
	}
	e.Summary += fmt.Sprintf("; %d node(s) count towards its budgets", nodes)
	return e, nil
}

// limitNote says whether the pool's spec.limits leave room for none of the
// instance types that would fit the pod: the limit, what the pool's nodes
// use, and the smallest type that fits. "" when the limits are not why.
func (m *model) limitNote(pod *corev1.Pod, np *v1.NodePool, types []*cloudprovider.InstanceType) string {
	if len(np.Spec.Limits) == 0 {
		return ""
	}
	used := corev1.ResourceList{}
	for _, n := range m.cluster.Nodes() {
		if n.NodePoolName() != np.Name {
			continue
		}
		for name, q := range n.Capacity() {
			cur := used[name]
			cur.Add(q)
			used[name] = cur
		}
	}
	reqs, err := requirements.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements)
	if err != nil {
		return ""
	}
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var smallest *cloudprovider.InstanceType
	for _, it := range types {
		if it.Requirements.Intersects(reqs) != nil || !it.HasAvailableOffering() || !covers(it.Allocatable(), want) {
			continue
		}
		withinLimits := true
		for name, limit := range np.Spec.Limits {
			total := used[name].DeepCopy()
			total.Add(it.Capacity[name])
			withinLimits = withinLimits && total.Cmp(limit) <= 0
		}
		if withinLimits {
			return ""
		}
		if smallest == nil || it.Capacity.Cpu().Cmp(*smallest.Capacity.Cpu()) < 0 {
			smallest = it
		}
	}
	if smallest == nil {
		return ""
	}
	var parts []string
	for name, limit := range np.Spec.Limits {
		u := used[name]
		parts = append(parts, fmt.Sprintf("%s %s (in use %s)", name, limit.String(), u.String()))
	}
	slices.Sort(parts)
	return fmt.Sprintf("limits reached: spec.limits %s leave no room for an instance type that fits the pod (the smallest is %s, cpu %s)",
		strings.Join(parts, ", "), smallest.Name, smallest.Capacity.Cpu().String())
}

func covers(have, want corev1.ResourceList) bool {
	for name, q := range want {
		h := have[name]
		if h.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// overlaidNote marks a price in a parenthesised list when a NodeOverlay set it.
func overlaidNote(overlaid bool) string {
	if overlaid {
		return ", price set by a NodeOverlay"
	}
	return ""
}

// overlaidAside marks a price in a sentence when a NodeOverlay set it.
func overlaidAside(overlaid bool) string {
	if overlaid {
		return " (set by a NodeOverlay)"
	}
	return ""
}
