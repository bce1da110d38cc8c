package static

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// DeprovisioningPriorityAnnotationKey on a NodeClaim of a static pool says
// which claims go first when the pool is scaled down: higher first, 0 when
// absent or not an integer (Karpenter's annotation).
const DeprovisioningPriorityAnnotationKey = v1.Group + "/deprovisioning-priority"

// Decision is what one pass does to a static NodePool.
type Decision struct {
	// Replicas is spec.replicas; Target is what the pool is brought up to:
	// replicas, capped by limits.nodes.
	Replicas, Target int64
	// Current counts the pool's NodeClaims that stay: not being deleted and
	// not the candidate of a disruption command (whose replacement counts
	// instead).
	Current int64
	// Create is how many NodeClaims to create.
	Create int64
	// Delete are the surplus NodeClaims to delete now, in order.
	Delete []*machine.Machine
	// Held is how many surplus NodeClaims the disruption budgets keep for
	// now; Budget is how many more launched nodes the budgets let go.
	Held, Budget int
	// BudgetErr is why a budget could not be evaluated (it then allows
	// nothing).
	BudgetErr error
}

// Limited reports whether limits.nodes keeps the pool below its replicas.
func (d Decision) Limited() bool { return d.Target < d.Replicas }

// Decide compares a static pool with its NodeClaims (the machines of the
// cluster-state model that belong to it) at now:
//
//  1. The claims that stay are counted: not being deleted, and not the
//     candidate of a disruption command (drift) once its replacement is in
//     the model (it is counted instead; before, the candidate still
//     counts).
//  2. Below the target (replicas capped by limits.nodes), the missing
//     claims are created.
//  3. Above replicas, the surplus goes: claims without a launched node
//     first (nothing to drain), then empty nodes, then nodes without a
//     karpenter.sh/do-not-disrupt pod, higher deprovisioning-priority
//     annotation, lower disruption cost, and name. Launched nodes go only
//     as far as the pool's budgets allow: scale-down is not one of the
//     budget reasons, so the budgets that list no reason apply, counted
//     over the pool's initialized nodes minus those already being
//     disrupted, as for any disruption.
//
// deleted names (by UID) the claims this controller has deleted: they are
// leaving even while the model, behind the API server, does not show them
// deleting yet (a second pass in that window counted them, deleted the
// surplus again and could take a different claim, below replicas).
func Decide(np *v1.NodePool, machines []*machine.Machine, deleted map[types.UID]bool, now time.Time) Decision {
	d := Decision{Replicas: *np.Spec.Replicas}
	d.Target = d.Replicas
	if limit, ok := np.Spec.Limits[disruption.LimitNodes]; ok && limit.Value() < d.Target {
		d.Target = max(limit.Value(), 0)
	}
	// The claims a replacement in the model replaces: until its replacement
	// is there, a claim a disruption command has taken still counts, or the
	// pool would launch its own replacement beside the command's.
	replaced := map[string]bool{}
	for _, m := range machines {
		if m.NodeClaim != nil && m.NodeClaim.DeletionTimestamp.IsZero() {
			for _, name := range nodeclaimutil.Replaces(m.NodeClaim) {
				replaced[name] = true
			}
		}
	}
	var staying []*machine.Machine
	initialized, disrupting := 0, 0
	for _, m := range machines {
		if m.NodeClaim == nil || m.NodePoolName() != np.Name {
			continue
		}
		taken := m.MarkedForDeletion || meta.IsStatusConditionTrue(m.NodeClaim.Status.Conditions, v1.ConditionTypeDisruptionReason)
		leaving := m.Deleting() || deleted[m.NodeClaim.UID] || (taken && replaced[m.NodeClaim.Name])
		if m.Initialized() {
			initialized++
			if leaving || !nodeReady(m.Node) {
				disrupting++
			}
		}
		if !leaving {
			staying = append(staying, m)
		}
	}
	d.Current = int64(len(staying))
	if d.Current < d.Target {
		d.Create = d.Target - d.Current
		return d
	}
	surplus := d.Current - d.Replicas
	if surplus <= 0 {
		return d
	}
	d.Budget, d.BudgetErr = disruption.AllowedDisruptions(np, "", now, initialized, disrupting)
	order := slices.Clone(staying)
	keys := make(map[*machine.Machine]scaleDownKey, len(order))
	for _, m := range order {
		keys[m] = keyOf(m, now)
	}
	slices.SortStableFunc(order, func(a, b *machine.Machine) int { return keys[a].compare(keys[b]) })
	// Claims without a node come first and cost no budget; once the
	// budget is spent, the rest of the surplus waits.
	budget := d.Budget
	for _, m := range order {
		if int64(len(d.Delete)) == surplus {
			break
		}
		if m.Node != nil {
			if budget <= 0 {
				break
			}
			budget--
		}
		d.Delete = append(d.Delete, m)
	}
	d.Held = int(surplus) - len(d.Delete)
	return d
}

// scaleDownKey orders the claims of a static pool for scale-down.
type scaleDownKey struct {
	stage        int // 0 not launched, 1 empty, 2 with pods
	doNotDisrupt bool
	priority     int
	cost         float64
	name         string
}

func keyOf(m *machine.Machine, now time.Time) scaleDownKey {
	k := scaleDownKey{name: m.NodeClaim.Name, priority: deprovisioningPriority(m.NodeClaim)}
	if m.Node == nil {
		return k
	}
	var pods []*corev1.Pod
	for _, p := range m.Pods {
		if podutil.IsReschedulable(p) {
			pods = append(pods, p)
		}
		if podutil.DoNotDisrupt(p, now).Active {
			k.doNotDisrupt = true
		}
	}
	if m.Node.Annotations[v1.DoNotDisruptAnnotationKey] == "true" {
		k.doNotDisrupt = true
	}
	k.stage = 1
	if len(pods) > 0 {
		k.stage = 2
	}
	k.cost = disruption.DisruptionCost(m.NodeClaim, pods, now)
	return k
}

func (a scaleDownKey) compare(b scaleDownKey) int {
	return cmp.Or(
		cmp.Compare(a.stage, b.stage),
		cmp.Compare(boolInt(a.doNotDisrupt), boolInt(b.doNotDisrupt)),
		cmp.Compare(b.priority, a.priority),
		cmp.Compare(a.cost, b.cost),
		cmp.Compare(a.name, b.name),
	)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func deprovisioningPriority(nc *v1.NodeClaim) int {
	p, err := strconv.Atoi(nc.Annotations[DeprovisioningPriorityAnnotationKey])
	if err != nil {
		return 0
	}
	return p
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
