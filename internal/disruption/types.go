package disruption

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// Input is one view of the cluster to decide on. Nothing in it is modified.
type Input struct {
	// Now is the time the decision is taken at (budgets' schedules,
	// consolidateAfter, do-not-disrupt durations, nominations).
	Now time.Time
	// Nodes are the machines of the cluster-state model (Cluster.Nodes).
	Nodes []*machine.Machine
	// NodePools are every NodePool with the instance types its cloud
	// provider offers. Pools that are not Ready still own nodes (prices,
	// budgets) but launch no replacement.
	NodePools []simulator.NodePool
	// DaemonSets size replacement nodes.
	DaemonSets []*appsv1.DaemonSet
	// PDBs guard evictions: a node with a pod whose PDBs allow no
	// disruption is not disrupted.
	PDBs []*policyv1.PodDisruptionBudget
	// PendingPods are pods waiting for capacity; simulations place them
	// too, so that consolidation does not take the room they need.
	PendingPods []*corev1.Pod
	// Refused names, per pending pod (by UID), the existing nodes its
	// hand-off gave up on (state.Cluster.Refused), as provisioning passes
	// them: simulations place the pod elsewhere, as provisioning will, so
	// room there is not the pod's.
	Refused map[types.UID][]string
	// Volume topology and namespace selectors, as provisioning passes them.
	PersistentVolumes      []*corev1.PersistentVolume
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	StorageClasses         []*storagev1.StorageClass
	Namespaces             []*corev1.Namespace
	// Disrupting names the NodeClaims that queued commands are disrupting;
	// they are no candidates and count against their pools' budgets.
	Disrupting map[string]bool
	// Replacements names the NodeClaims that queued commands launched; they
	// are not disrupted while their command runs.
	Replacements map[string]bool
	// Repairs names the NodeClaims the node.health controller asks to
	// repair, each with why (for example "Ready=False since ..., longer
	// than the 30m0s the cloud provider tolerates"); MethodRepair replaces
	// them first, whatever the guards and budgets say.
	Repairs map[string]string
	// SkipConsolidation skips both consolidation methods (the controller
	// sets it while nothing consolidation depends on has changed).
	SkipConsolidation bool
}

// Options tune decisions.
type Options struct {
	// SpotToSpotConsolidation lets consolidation replace spot nodes with
	// cheaper spot nodes (off by default, as in Karpenter).
	SpotToSpotConsolidation bool
	// Simulator tunes the scheduling simulations.
	Simulator simulator.Options
	// Methods restricts Decide to these methods (tried in the usual order);
	// every method when empty.
	Methods []Method
	// MaxMultiNodeCandidates bounds the multi-node search; 100 when zero.
	MaxMultiNodeCandidates int
	// ReportRemovable asks Decide for Outcome.Removable: one more
	// multi-node search, without budgets, on the passes consolidation runs.
	ReportRemovable bool
	// MultiNodeReplacements lets multi-node consolidation replace its
	// candidates with several cheaper nodes, fewer than it removes, whose
	// prices together are strictly below theirs and whose Balanced score
	// passes at k = 2 (a Balanced pool's consolidationThreshold when set),
	// whatever the pool's policy. Karpenter launches at most
	// one node per consolidation, so a cluster of small, well-used nodes
	// that one large node cannot hold stays as it is, though a few large
	// nodes would cost less.
	MultiNodeReplacements bool
	// Clock and the timeouts bound consolidation's search: when the time
	// is up, the best command found so far is returned. No bound when
	// Clock is nil or a timeout is zero.
	Clock             clock.PassiveClock
	MultiNodeTimeout  time.Duration
	SingleNodeTimeout time.Duration
	// Interrupted, when set and true, ends consolidation's search as a
	// timeout does (the controller stops it when its context ends, so that
	// shutting down never waits for a long search).
	Interrupted func() bool
}

// Karpenter's bounds: at most 100 multi-node candidates; spot-to-spot
// replacement needs 15 cheaper types and launches at most 15.
const (
	defaultMaxMultiNodeCandidates = 100
	minSpotToSpotOptions          = 15
)

// Method is a way of finding nodes to disrupt.
type Method string

// The methods, in the order Decide tries them. Repair is Dovetail's name
// for the node.health controller's repairs, which Karpenter carries out
// outside its disruption methods.
const (
	MethodRepair     Method = "repair"
	MethodEmptiness  Method = "emptiness"
	MethodDrift      Method = "drift"
	MethodMultiNode  Method = "multi-node-consolidation"
	MethodSingleNode Method = "single-node-consolidation"
)

// ConsolidationType is the metrics label of the method: empty, multi,
// single, or "" for drift.
func (m Method) ConsolidationType() string {
	switch m {
	case MethodEmptiness:
		return "empty"
	case MethodMultiNode:
		return "multi"
	case MethodSingleNode:
		return "single"
	}
	return ""
}

// NeedsValidation reports whether the method's commands wait the
// validation delay and are re-simulated before they are carried out.
// Drift is eventual and is not validated, as in Karpenter; repair is
// forced and is not validated either.
func (m Method) NeedsValidation() bool { return m != MethodDrift && m != MethodRepair }

// Forced reports whether the method's commands delete their candidates even
// when their replacements fail or are not initialized in time, instead of
// rolling back: repair's.
func (m Method) Forced() bool { return m == MethodRepair }

// Decision is what a command does: delete its candidates, or launch
// replacements first and then delete them.
type Decision string

// Decisions.
const (
	DecisionDelete  Decision = "delete"
	DecisionReplace Decision = "replace"
)

// Candidate is a node that passed every guard and may be disrupted.
type Candidate struct {
	*machine.Machine
	// NodePool owns the node.
	NodePool *v1.NodePool
	// InstanceType, Zone and CapacityType locate its price; InstanceType is
	// nil when the provider no longer lists the type.
	InstanceType *cloudprovider.InstanceType
	Zone         string
	CapacityType string
	// Price is the hourly price of its offering; PriceKnown is false when
	// the offering is not listed (it is then never consolidated).
	Price      float64
	PriceKnown bool
	// Pods are the pods that would need a new home: not terminal, not
	// being deleted, not daemonset or mirror pods, not tolerating the
	// disrupted taint.
	Pods []*corev1.Pod
	// DisruptionCost grows with the pods to move, their priority and
	// deletion cost, and the node's remaining lifetime.
	DisruptionCost float64
	// Consolidatable: consolidateAfter has passed since the last pod event.
	Consolidatable bool
	// Drifted and DriftedSince come from the NodeClaim's Drifted condition.
	Drifted      bool
	DriftedSince time.Time
	// Unhealthy says why the node is repaired (Input.Repairs); set on the
	// candidates of repair commands only.
	Unhealthy string
}

// NodeClaimName names the candidate's NodeClaim.
func (c *Candidate) NodeClaimName() string { return c.NodeClaim.Name }

// Empty reports a candidate without pods to move.
func (c *Candidate) Empty() bool { return len(c.Pods) == 0 }

// SavingsRatio is the price saved per unit of disruption cost; candidates
// with the highest ratio go first.
func (c *Candidate) SavingsRatio() float64 {
	return c.Price / max(c.DisruptionCost, 1e-9)
}

// Replacement is a NodeClaim to launch before the candidates are deleted.
type Replacement struct {
	NodePool *v1.NodePool
	Claim    *simulator.NewNodeClaim
}

// NodeClaim renders the replacement exactly as provisioning renders a
// claim (see nodeclaimutil.FromPlan).
func (r *Replacement) NodeClaim() *v1.NodeClaim {
	return nodeclaimutil.FromPlan(r.Claim, r.NodePool)
}

// Command is one disruption to carry out.
type Command struct {
	Method Method
	Reason v1.DisruptionReason
	// Candidates are the nodes to delete, in order.
	Candidates []*Candidate
	// Replacements are launched, and must be initialized, before the
	// candidates are deleted.
	Replacements []*Replacement
	// PriceBefore is the hourly price of the candidates (those with a known
	// price); PriceAfter that of the cheapest option of each replacement.
	PriceBefore, PriceAfter float64
	// Plan is the simulation that justified the command: where the
	// candidates' pods go. Nil for commands of empty nodes.
	Plan *simulator.Plan
	// NoReplacement says why a repair command deletes its candidate
	// without replacements although it has pods to move (they fit nowhere
	// the simulation could find); "" otherwise.
	NoReplacement string
	// AvoidedNodes are the nodes the simulation gave no new pod to: a
	// re-pack with MultiNodeReplacements keeps off the other nodes
	// consolidation could take next. Validate simulates the same way, so
	// that a node that stopped being a candidate in between does not turn
	// the decision into another one.
	AvoidedNodes []string
}

// Decision says whether the command deletes or replaces.
func (c *Command) Decision() Decision {
	if len(c.Replacements) > 0 {
		return DecisionReplace
	}
	return DecisionDelete
}

// Savings is PriceBefore - PriceAfter.
func (c *Command) Savings() float64 { return c.PriceBefore - c.PriceAfter }

// String explains the command in one sentence, for events and logs, for
// example "Underutilized: replacing 2 nodes (m5.xlarge, m5.large; $0.288/h)
// with 1 node (c5.large; $0.085/h), saving $0.203/h".
func (c *Command) String() string {
	var b strings.Builder
	if why := c.unhealthy(); why != "" {
		fmt.Fprintf(&b, "%s (%s): ", c.Reason, why)
	} else {
		fmt.Fprintf(&b, "%s: ", c.Reason)
	}
	verb := "deleting"
	if c.Decision() == DecisionReplace {
		verb = "replacing"
	}
	fmt.Fprintf(&b, "%s %s (%s; $%.3f/h)", verb, plural(len(c.Candidates), "node"), candidateTypes(c.Candidates), c.PriceBefore)
	if c.Decision() == DecisionReplace {
		fmt.Fprintf(&b, " with %s (%s; $%.3f/h)", plural(len(c.Replacements), "node"), replacementTypes(c.Replacements), c.PriceAfter)
	}
	if c.Method == MethodRepair {
		if c.NoReplacement != "" {
			fmt.Fprintf(&b, ", without replacement (%s)", c.NoReplacement)
		}
		return b.String()
	}
	if c.Reason != v1.DisruptionReasonDrifted || c.Savings() > 0 {
		fmt.Fprintf(&b, ", saving $%.3f/h", c.Savings())
	}
	return b.String()
}

// unhealthy is why the command's first candidate is repaired, "" for
// other commands.
func (c *Command) unhealthy() string {
	if c.Method != MethodRepair || len(c.Candidates) == 0 {
		return ""
	}
	return c.Candidates[0].Unhealthy
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func candidateTypes(cs []*Candidate) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		name := "unknown type"
		if c.InstanceType != nil {
			name = c.InstanceType.Name
		}
		names = append(names, name)
	}
	return summarize(names)
}

func replacementTypes(rs []*Replacement) string {
	names := make([]string, 0, len(rs))
	for _, r := range rs {
		if len(r.Claim.InstanceTypes) > 0 {
			names = append(names, r.Claim.InstanceTypes[0].Name)
		}
	}
	return summarize(names)
}

// summarize lists up to three names and counts the rest.
func summarize(names []string) string {
	const shown = 3
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// Event reasons of skips, as Karpenter names them.
const (
	// ReasonDisruptionBlocked: a guard or a budget keeps a node or pool from being disrupted.
	ReasonDisruptionBlocked = "DisruptionBlocked"
	// ReasonUnconsolidatable: a candidate cannot be consolidated (no cheaper home for its pods).
	ReasonUnconsolidatable = "Unconsolidatable"
)

// Blocked is a node that was not disrupted, and why.
type Blocked struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// Reason is ReasonDisruptionBlocked or ReasonUnconsolidatable.
	Reason  string
	Message string
}

// BudgetStatus is what a NodePool's budgets allow for a reason now.
type BudgetStatus struct {
	NodePool *v1.NodePool
	Reason   v1.DisruptionReason
	// Allowed is how many more nodes may be disrupted (Unlimited when no
	// budget applies).
	Allowed int
	// Nodes counts the pool's initialized nodes (what percentages are of).
	Nodes int
	// Eligible counts the pool's candidates for the reason.
	Eligible int
	// Blocked is set when the budget turned a candidate away in this pass.
	Blocked bool
	// Err is set when a budget could not be evaluated (Allowed is then
	// computed with that budget at zero).
	Err error
}

// InvalidAnnotation is a pod whose karpenter.sh/do-not-disrupt value is
// neither "true" nor a duration; it does not block.
type InvalidAnnotation struct {
	Pod *corev1.Pod
}

// Outcome is the result of Decide.
type Outcome struct {
	// Command is nil when there is nothing to do.
	Command *Command
	// Blocked lists the nodes skipped by a guard, and consolidation
	// candidates that could not be consolidated.
	Blocked []Blocked
	// Scores are the Balanced policy's verdicts on the consolidation moves
	// it was asked about, approved or rejected, in the order scored.
	Scores []MoveScore
	// Held lists the candidates a budget turned away, with the budget.
	Held []Held
	// Budgets per NodePool and reason.
	Budgets []BudgetStatus
	// InvalidAnnotations lists pods with an unparsable do-not-disrupt value.
	InvalidAnnotations []InvalidAnnotation
	// Eligible counts candidates per reason.
	Eligible map[v1.DisruptionReason]int
	// Durations of the methods that ran.
	Durations map[Method]time.Duration
	// TimedOut lists the methods that hit their time bound.
	TimedOut []Method
	// Removable, with Options.ReportRemovable, names the Nodes consolidation
	// means to remove: the longest prefix of the consolidation candidates
	// (at most MaxMultiNodeCandidates) that multi-node consolidation could
	// take with no budget in the way, or none (pass.removable).
	// RemovableKnown is false when consolidation did not run this pass
	// (skipped, restricted by Options.Methods, or a repair, emptiness or
	// drift command came first) or the search ran out of time; Removable
	// says nothing then.
	Removable      []string
	RemovableKnown bool
}
