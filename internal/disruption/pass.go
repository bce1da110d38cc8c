package disruption

import (
	"cmp"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// budgetedReasons are the reasons budgets are reported for. Expiration is
// forceful and not budgeted (v1 semantics), so Expired is accepted in
// budgets but constrains nothing.
func budgetedReasons() []v1.DisruptionReason {
	return []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}
}

// poolInfo is a NodePool with its instance types by name.
type poolInfo struct {
	np    *v1.NodePool
	types map[string]*cloudprovider.InstanceType
	// launchable pools may launch replacements for moved pods: Ready, not
	// being deleted, with instance types, and not static (a static pool
	// launches only to keep its replica count; see staticDrift).
	launchable bool
	sim        simulator.NodePool
}

// budgetState is a pool's budget for one reason during a pass.
type budgetState struct {
	allowed, used, eligible int
	err                     error
	blocked                 bool // a candidate was turned away
}

// remaining is how many more nodes the pass may take.
func (b *budgetState) remaining() int { return b.allowed - b.used }

// take reserves one node, or reports that the budget is spent.
func (b *budgetState) take() bool {
	if b.used >= b.allowed {
		b.blocked = true
		return false
	}
	b.used++
	return true
}

// pass is one decision: the candidates, budgets and simulation model
// derived from an Input, shared by the methods.
type pass struct {
	in   Input
	opts Options
	now  time.Time

	pools      map[string]*poolInfo
	pdbs       *pdbIndex
	candidates []*Candidate // passed the guards, best first
	blocked    []Blocked
	blockedBy  map[string]string // NodeClaim name -> why it is no candidate
	invalid    []InvalidAnnotation
	budgets    map[string]map[v1.DisruptionReason]*budgetState
	numNodes   map[string]int
	disrupting map[string]int
	drifted    []string // names of every drifted node, candidates or not

	background []*corev1.Pod // pods that will move anyway: pending, and on nodes being disrupted
	removed    []string      // nodes being disrupted but not yet marked for deletion
	model      *simulator.Model
	// room holds, for each background pod with room on the cluster
	// without any command, the node of that room (see roomNow), solved
	// once.
	room     map[*corev1.Pod]string
	roomOnce sync.Once
	timedOut []Method

	totals map[string]poolTotal // per pool, for the Balanced score
	scores []MoveScore
	held   []Held
	holds  map[string]bool // NodeClaim/reason already held
	// windows memoizes NextWindow per pool, reason and node counts.
	windows map[string]time.Time
}

func newPass(in Input, opts Options) *pass {
	if opts.MaxMultiNodeCandidates <= 0 {
		opts.MaxMultiNodeCandidates = defaultMaxMultiNodeCandidates
	}
	p := &pass{
		in: in, opts: opts, now: in.Now,
		pools:      map[string]*poolInfo{},
		pdbs:       newPDBIndex(in.PDBs),
		blockedBy:  map[string]string{},
		budgets:    map[string]map[v1.DisruptionReason]*budgetState{},
		numNodes:   map[string]int{},
		disrupting: map[string]int{},
	}
	for _, np := range in.NodePools {
		if np.NodePool == nil {
			continue
		}
		pi := &poolInfo{np: np.NodePool, types: map[string]*cloudprovider.InstanceType{}, sim: np}
		for _, it := range np.InstanceTypes {
			pi.types[it.Name] = it
		}
		pi.launchable = nodepoolutil.IsReady(np.NodePool) && len(np.InstanceTypes) > 0 && !np.NodePool.IsStatic()
		p.pools[np.NodePool.Name] = pi
	}
	p.countNodes()
	p.buildCandidates()
	return p
}

// countNodes counts, per pool, the initialized nodes budgets are a share of
// and those already being disrupted (not Ready, being deleted, or in a
// queued command), and collects the pods that will move anyway.
func (p *pass) countNodes() {
	p.background = append(p.background, p.in.PendingPods...)
	for _, n := range p.in.Nodes {
		if n.NodeClaim == nil || n.Node == nil {
			continue
		}
		queued := p.in.Disrupting[n.NodeClaim.Name]
		if queued && !n.MarkedForDeletion {
			p.removed = append(p.removed, n.Name())
		}
		if n.MarkedForDeletion || queued {
			p.background = append(p.background, reschedulable(n.Pods)...)
		}
		if cond := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
			p.drifted = append(p.drifted, n.Name())
		}
		if !n.Initialized() {
			continue
		}
		pool := n.NodePoolName()
		p.numNodes[pool]++
		if n.MarkedForDeletion || queued || !nodeReady(n.Node) {
			p.disrupting[pool]++
		}
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// budget returns the pool's budget state for the reason, evaluating it once.
func (p *pass) budget(pool string, reason v1.DisruptionReason) *budgetState {
	byReason := p.budgets[pool]
	if byReason == nil {
		byReason = map[v1.DisruptionReason]*budgetState{}
		p.budgets[pool] = byReason
	}
	b := byReason[reason]
	if b == nil {
		b = &budgetState{}
		if pi := p.pools[pool]; pi != nil {
			b.allowed, b.err = AllowedDisruptions(pi.np, reason, p.now, p.numNodes[pool], p.disrupting[pool])
		}
		byReason[reason] = b
	}
	return b
}

// buildCandidates runs the guards over every managed, registered node and
// orders those that pass by savings per unit of disruption cost.
func (p *pass) buildCandidates() {
	for _, n := range p.in.Nodes {
		if n.NodeClaim == nil || n.Node == nil {
			continue // not ours, or still in flight
		}
		name := n.NodeClaim.Name
		if p.in.Disrupting[name] || p.in.Replacements[name] {
			continue // a queued command owns it
		}
		pi := p.pools[n.NodePoolName()]
		if pi == nil {
			p.block(n, ReasonDisruptionBlocked, "NodePool "+n.NodePoolName()+" not found")
			continue
		}
		if pi.np.DeletionTimestamp != nil {
			continue // the pool's nodes go with it
		}
		pods := reschedulable(n.Pods)
		if msg := p.guardMessage(n, pods); msg != "" {
			p.block(n, ReasonDisruptionBlocked, msg)
			continue
		}
		p.candidates = append(p.candidates, p.newCandidate(n, pi, pods))
	}
	slices.SortStableFunc(p.candidates, func(a, b *Candidate) int {
		return cmp.Or(
			cmp.Compare(b.SavingsRatio(), a.SavingsRatio()),
			cmp.Compare(a.DisruptionCost, b.DisruptionCost),
			cmp.Compare(a.Name(), b.Name()),
		)
	})
}

func (p *pass) newCandidate(n *machine.Machine, pi *poolInfo, pods []*corev1.Pod) *Candidate {
	labels := n.Labels()
	c := &Candidate{
		Machine: n, NodePool: pi.np, Pods: pods,
		Zone: labels[corev1.LabelTopologyZone], CapacityType: labels[v1.CapacityTypeLabelKey],
		InstanceType:   pi.types[labels[corev1.LabelInstanceTypeStable]],
		DisruptionCost: DisruptionCost(n.NodeClaim, pods, p.now),
		Consolidatable: IsConsolidatable(n.NodeClaim, pi.np, p.now),
	}
	if c.InstanceType != nil {
		// Unavailable offerings still have a price: the node runs on one.
		for _, o := range c.InstanceType.Offerings {
			if o.Zone == c.Zone && o.CapacityType == c.CapacityType {
				c.Price, c.PriceKnown = o.Price, true
				break
			}
		}
	}
	if cond := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
		c.Drifted, c.DriftedSince = true, cond.LastTransitionTime.Time
	}
	return c
}

// block records a node that is no candidate (or could not be disrupted).
func (p *pass) block(n *machine.Machine, reason, msg string) {
	p.blocked = append(p.blocked, Blocked{Node: n.Node, NodeClaim: n.NodeClaim, Reason: reason, Message: msg})
	if n.NodeClaim != nil {
		p.blockedBy[n.NodeClaim.Name] = msg
	}
}

// timeUp reports whether the method's time bound has passed since start.
func (p *pass) timeUp(start time.Time, limit time.Duration) bool {
	if p.opts.Interrupted != nil && p.opts.Interrupted() {
		return true
	}
	return p.opts.Clock != nil && limit > 0 && p.opts.Clock.Since(start) > limit
}

// started is the method's start time on the options' clock.
func (p *pass) started() time.Time {
	if p.opts.Clock == nil {
		return time.Time{}
	}
	return p.opts.Clock.Now()
}

// getModel builds the simulation model once per pass: every machine, the
// pending pods, and the pools that may launch.
func (p *pass) getModel() *simulator.Model {
	if p.model != nil {
		return p.model
	}
	var pools []simulator.NodePool
	for _, np := range p.in.NodePools {
		if pi := p.pools[np.NodePool.Name]; pi != nil && pi.launchable {
			pools = append(pools, pi.sim)
		}
	}
	snapshot := machine.NewSnapshot(p.in.Nodes, p.in.DaemonSets, p.in.PendingPods, pools)
	snapshot.PersistentVolumes = p.in.PersistentVolumes
	snapshot.PersistentVolumeClaims = p.in.PersistentVolumeClaims
	snapshot.StorageClasses = p.in.StorageClasses
	snapshot.Namespaces = p.in.Namespaces
	snapshot.Refused = p.in.Refused
	p.model = simulator.New(snapshot, p.opts.Simulator)
	return p.model
}
