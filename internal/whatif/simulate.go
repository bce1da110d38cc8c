package whatif

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// ErrNoNodePool is returned when the cluster has no NodePool: Dovetail
// would launch and consolidate nothing.
var ErrNoNodePool = errors.New("the cluster has no NodePool, so Dovetail would launch and consolidate nothing")

// InstanceTypesNote says where simulated instance types and prices come from.
const InstanceTypesNote = "instance types and prices: the embedded EC2 catalog (us-east-1a/b/c, AL2023), used for every NodeClass kind"

// Options tune a simulation.
type Options struct {
	// Now is the moment the decisions are taken at (budgets' schedules,
	// consolidateAfter, do-not-disrupt durations).
	Now time.Time
	// InstanceTypes are offered to every NodePool; nil means CatalogInstanceTypes.
	InstanceTypes []*cloudprovider.InstanceType
	// Simulator and Disruption tune the decisions as the controller's flags do.
	Simulator  simulator.Options
	Disruption disruption.Options
	// Original, when set, is the cluster before the what-if changes; its
	// nodes' price is reported as Cost.BeforeChanges.
	Original *Objects
}

// Result is what Dovetail would do.
type Result struct {
	// Note says where the instance types and prices come from.
	Note string `json:"note"`
	// Overlays are the cluster's NodeOverlays, where they apply and why
	// not; the prices and resources of the plan are the overlaid ones.
	Overlays []OverlayUse `json:"overlays,omitempty"`
	// NodePools lists every NodePool, ready or not.
	NodePools []PoolStatus `json:"nodePools"`
	// PendingPods counts the pods the provisioning pass simulated.
	PendingPods int `json:"pendingPods"`
	// Launches are the NodeClaims provisioning would create.
	Launches []Launch `json:"launches"`
	// Placements are pending pods that fit on existing or in-flight nodes.
	Placements []Placement `json:"placements"`
	// Unschedulable are pending pods that fit nowhere, and why.
	Unschedulable []PodReason `json:"unschedulable"`
	// Disruption is the decision the disruption controller would take now.
	Disruption Disruption `json:"disruption"`
	// Cost is the hourly price of the nodes before and after.
	Cost Cost `json:"cost"`
}

// PoolStatus is a NodePool, whether it may launch, and why not.
type PoolStatus struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight"`
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// Launch is a NodeClaim to create.
type Launch struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes are the cheapest options (at most 10 shown); Options
	// counts them all.
	InstanceTypes []string `json:"instanceTypes"`
	Options       int      `json:"options"`
	// InstanceType, Zone, CapacityType and Price are the cheapest offering.
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"pricePerHour"`
	// PriceOverlaid is set when a NodeOverlay set that price.
	PriceOverlaid bool `json:"priceOverlaid,omitempty"`
	// Requests are the pods' requests plus daemonsets.
	Requests map[string]string `json:"requests"`
	Pods     []string          `json:"pods"`
}

// Placement is a pending pod placed on an existing or in-flight node.
type Placement struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// PodReason is a pod that cannot be placed, and why.
type PodReason struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// Disruption is the disruption decision.
type Disruption struct {
	// Command is "" when there is nothing to disrupt; otherwise the same
	// sentence the controller logs and puts in its events.
	Command      string   `json:"command,omitempty"`
	Method       string   `json:"method,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	Decision     string   `json:"decision,omitempty"`
	Nodes        []string `json:"nodes,omitempty"`
	Replacements []Launch `json:"replacements,omitempty"`
	// PodsMoved counts the pods the command would move.
	PodsMoved   int     `json:"podsMoved"`
	PriceBefore float64 `json:"priceBeforePerHour"`
	PriceAfter  float64 `json:"priceAfterPerHour"`
	Savings     float64 `json:"savingsPerHour"`
	// Candidates are the nodes that passed every guard, in the order the
	// methods consider them (most savings per unit of disruption cost first).
	Candidates []Candidate `json:"candidates,omitempty"`
	// Blocked are the nodes that were not disrupted, and why.
	Blocked []NodeReason `json:"blocked,omitempty"`
	// Budgets are what each NodePool's budgets allow now, by reason.
	Budgets []Budget `json:"budgets,omitempty"`
}

// Candidate is a node disruption may act on.
type Candidate struct {
	Node         string  `json:"node"`
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	Price        float64 `json:"pricePerHour"`
	// PriceOverlaid is set when a NodeOverlay set that price.
	PriceOverlaid bool `json:"priceOverlaid,omitempty"`
	// Pods counts the pods that would move.
	Pods int `json:"pods"`
	// Consolidatable: consolidateAfter has passed; Drifted: the NodeClaim drifted.
	Consolidatable bool `json:"consolidatable"`
	Drifted        bool `json:"drifted"`
}

// NodeReason is a node and why it is not disrupted.
type NodeReason struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Budget is what a NodePool's budgets allow for one reason now.
type Budget struct {
	NodePool string `json:"nodePool"`
	Reason   string `json:"reason"`
	// Allowed is -1 when no budget limits the reason.
	Allowed  int `json:"allowed"`
	Nodes    int `json:"nodes"`
	Eligible int `json:"eligible"`
}

// Cost is the hourly price of the nodes (those whose offering the catalog
// prices) now, after provisioning, and after provisioning and disruption.
type Cost struct {
	// BeforeChanges is the price of the cluster before the what-if changes
	// (removed nodes still counted); Before is after them.
	BeforeChanges     float64 `json:"beforeChangesPerHour"`
	Before            float64 `json:"beforePerHour"`
	AfterProvisioning float64 `json:"afterProvisioningPerHour"`
	After             float64 `json:"afterPerHour"`
	// Unpriced counts the nodes whose offering has no price.
	Unpriced int `json:"unpricedNodes"`
}

// Simulate runs a provisioning pass and a disruption decision on the
// objects, as the controllers would now, and writes nothing anywhere.
func Simulate(o *Objects, opts Options) (*Result, error) {
	if len(o.NodePools) == 0 {
		return nil, ErrNoNodePool
	}
	types := opts.InstanceTypes
	if types == nil {
		var err error
		if types, err = CatalogInstanceTypes(); err != nil {
			return nil, err
		}
	}
	m := newModel(o, opts.Now, types)
	res := &Result{Note: InstanceTypesNote, Overlays: m.over.Uses(), PendingPods: len(m.pending)}
	pools := slices.Clone(o.NodePools)
	nodepoolutil.SortByWeight(pools)
	for _, np := range pools {
		res.NodePools = append(res.NodePools, PoolStatus{Name: np.Name, Weight: weight(np), Ready: m.notReady[np.Name] == "", Reason: m.notReady[np.Name]})
	}

	// 1. Provisioning, exactly as Provisioner.Schedule does it.
	if len(m.pending) > 0 {
		plan := simulator.Simulate(m.snapshot(m.pending, m.ready), opts.Simulator)
		for _, c := range plan.NewNodeClaims {
			res.Launches = append(res.Launches, m.launchOf(c))
		}
		for _, p := range plan.Placements {
			res.Placements = append(res.Placements, Placement{Pod: klog.KObj(p.Pod).String(), Node: p.Node})
		}
		for _, u := range plan.Unschedulable {
			res.Unschedulable = append(res.Unschedulable, PodReason{Pod: klog.KObj(u.Pod).String(), Reason: u.Reason})
		}
		m.launch(plan)
	}

	// 2. Disruption, as the disruption controller decides.
	in := m.disruptionInput()
	out := disruption.Decide(in, opts.Disruption)
	res.Disruption = m.disruptionOf(out)
	for _, c := range disruption.Candidates(in, opts.Disruption) {
		cand := Candidate{Node: c.Name(), NodePool: c.NodePool.Name, Price: c.Price, Pods: len(c.Pods), Consolidatable: c.Consolidatable, Drifted: c.Drifted}
		if c.InstanceType != nil {
			cand.InstanceType = c.InstanceType.Name
			cand.PriceOverlaid = m.over.PriceOverlaid(c.NodePool.Name, c.InstanceType.Name, c.Zone, c.CapacityType)
		}
		res.Disruption.Candidates = append(res.Disruption.Candidates, cand)
	}

	// 3. Prices.
	for _, n := range o.Nodes {
		if price, ok := m.price(n.Labels); ok {
			res.Cost.Before += price
		} else {
			res.Cost.Unpriced++
		}
	}
	res.Cost.BeforeChanges = res.Cost.Before
	if opts.Original != nil {
		res.Cost.BeforeChanges = 0
		for _, n := range opts.Original.Nodes {
			price, _ := m.price(n.Labels)
			res.Cost.BeforeChanges += price
		}
	}
	for _, l := range res.Launches {
		res.Cost.AfterProvisioning += l.Price
	}
	res.Cost.AfterProvisioning += res.Cost.Before
	res.Cost.After = res.Cost.AfterProvisioning - res.Disruption.Savings
	return res, nil
}

func weight(np *v1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

// maxShownTypes bounds the instance-type options listed per launch.
const maxShownTypes = 10

// launchOf reports a planned claim, its price marked when overlaid.
func (m *model) launchOf(c *simulator.NewNodeClaim) Launch {
	l := Launch{NodePool: c.NodePool, Options: len(c.InstanceTypes), Price: c.Price, Requests: map[string]string{}}
	for i, it := range c.InstanceTypes {
		if i == maxShownTypes {
			break
		}
		l.InstanceTypes = append(l.InstanceTypes, it.Name)
	}
	if o, ok := offering(c); ok {
		l.InstanceType, l.Zone, l.CapacityType = c.InstanceTypes[0].Name, o.Zone, o.CapacityType
		l.PriceOverlaid = m.over.PriceOverlaid(c.NodePool, l.InstanceType, l.Zone, l.CapacityType)
	}
	for name, q := range c.Requests {
		l.Requests[string(name)] = q.String()
	}
	for _, p := range c.Pods {
		l.Pods = append(l.Pods, klog.KObj(p).String())
	}
	return l
}

func (m *model) disruptionOf(out disruption.Outcome) Disruption {
	var d Disruption
	if cmd := out.Command; cmd != nil {
		d.Command = cmd.String()
		d.Method, d.Reason, d.Decision = string(cmd.Method), string(cmd.Reason), string(cmd.Decision())
		d.PriceBefore, d.PriceAfter, d.Savings = cmd.PriceBefore, cmd.PriceAfter, cmd.Savings()
		for _, c := range cmd.Candidates {
			d.Nodes = append(d.Nodes, c.Name())
			d.PodsMoved += len(c.Pods)
		}
		for _, r := range cmd.Replacements {
			d.Replacements = append(d.Replacements, m.launchOf(r.Claim))
		}
	}
	for _, b := range out.Blocked {
		name := ""
		switch {
		case b.Node != nil:
			name = b.Node.Name
		case b.NodeClaim != nil:
			name = b.NodeClaim.Name
		}
		d.Blocked = append(d.Blocked, NodeReason{Node: name, Reason: b.Reason, Message: b.Message})
	}
	for _, b := range out.Budgets {
		d.Budgets = append(d.Budgets, budgetOf(b))
	}
	return d
}

// budgetOf reports what a NodePool's budgets allow for one reason.
func budgetOf(b disruption.BudgetStatus) Budget {
	allowed := b.Allowed
	if allowed == disruption.Unlimited {
		allowed = -1
	}
	return Budget{NodePool: b.NodePool.Name, Reason: string(b.Reason), Allowed: allowed, Nodes: b.Nodes, Eligible: b.Eligible}
}

// launch records a plan in the model as Provisioner.Launch does, so that
// the disruption decision sees the cluster the controllers would see next:
// the nodes pods were planned onto are nominated, and each new NodeClaim is
// in flight.
func (m *model) launch(plan *simulator.Plan) {
	window := provisioning.Options{}.NominationWindow()
	for _, p := range plan.Placements {
		m.cluster.NominateNodeForPod(p.Node, window)
		m.cluster.PlanPods(p.Node, []types.NamespacedName{{Namespace: p.Pod.Namespace, Name: p.Pod.Name}})
	}
	byName := map[string]*v1.NodePool{}
	for _, p := range m.ready {
		byName[p.NodePool.Name] = p.NodePool
	}
	for i, c := range plan.NewNodeClaims {
		nc := nodeclaimutil.FromPlan(c, byName[c.NodePool])
		nc.Name = fmt.Sprintf("%swhatif-%d", nc.GenerateName, i)
		m.cluster.UpdateNodeClaim(nc)
		m.cluster.NominateNodeForPod(nc.Name, window)
	}
}
