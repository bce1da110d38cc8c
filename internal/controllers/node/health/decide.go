package health

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// AllowedUnhealthyPercent is the share of a NodePool's nodes (or of the
// cluster's, for nodes without a NodePool) that may be unhealthy for repair
// to go on: Karpenter's safeguard.
const AllowedUnhealthyPercent = 20

// Action is what Decide says to do with a node.
type Action string

// The actions.
const (
	// Healthy: no repair policy matches the node.
	Healthy Action = "Healthy"
	// Wait: a policy matches but its toleration has not elapsed; come back
	// at Decision.RepairAt.
	Wait Action = "Wait"
	// Blocked: the toleration has elapsed but too many nodes are unhealthy.
	Blocked Action = "Blocked"
	// Repair: replace the node now.
	Repair Action = "Repair"
)

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// Condition is the node condition that matched a policy (the one whose
	// toleration ends first), and Policy that policy. Unset when Healthy.
	Condition corev1.NodeCondition
	Policy    cloudprovider.RepairPolicy
	// RepairAt is when the condition's toleration ends.
	RepairAt time.Time
	// Unhealthy, Total and Allowed describe the safeguard's count, set when
	// the toleration has elapsed: unhealthy nodes among the Total counted,
	// and how many may be unhealthy for repair to proceed.
	Unhealthy, Total, Allowed int
}

// UnhealthyCondition returns the node's condition that matches one of the
// policies, the matching policy and when its toleration ends. When several
// match, it is the one whose toleration ends first.
func UnhealthyCondition(node *corev1.Node, policies []cloudprovider.RepairPolicy) (corev1.NodeCondition, cloudprovider.RepairPolicy, time.Time, bool) {
	var (
		cond   corev1.NodeCondition
		policy cloudprovider.RepairPolicy
		at     time.Time
		found  bool
	)
	for _, p := range policies {
		c, ok := matching(node, p)
		if !ok {
			continue
		}
		end := c.LastTransitionTime.Add(p.TolerationDuration)
		if !found || end.Before(at) {
			cond, policy, at, found = c, p, end, true
		}
	}
	return cond, policy, at, found
}

// IsUnhealthy reports whether any policy matches the node, however long ago
// its condition changed: what the safeguard counts.
func IsUnhealthy(node *corev1.Node, policies []cloudprovider.RepairPolicy) bool {
	for _, p := range policies {
		if _, ok := matching(node, p); ok {
			return true
		}
	}
	return false
}

func matching(node *corev1.Node, p cloudprovider.RepairPolicy) (corev1.NodeCondition, bool) {
	for _, c := range node.Status.Conditions {
		if string(c.Type) == p.ConditionType && string(c.Status) == string(p.ConditionStatus) {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

// AllowedUnhealthy is how many of total nodes may be unhealthy for repair
// to proceed: AllowedUnhealthyPercent of them, rounded up, as a PDB's
// percentage is.
func AllowedUnhealthy(total int) int {
	return int(math.Ceil(float64(total) * AllowedUnhealthyPercent / 100))
}

// Decide says what to do with node at now, given the provider's policies and
// the nodes the safeguard counts (the node's NodePool's, or the cluster's
// for a node without one; node itself among them).
func Decide(now time.Time, node *corev1.Node, policies []cloudprovider.RepairPolicy, peers []*corev1.Node) Decision {
	cond, policy, at, ok := UnhealthyCondition(node, policies)
	if !ok {
		return Decision{Action: Healthy}
	}
	d := Decision{Action: Wait, Condition: cond, Policy: policy, RepairAt: at}
	if now.Before(at) {
		return d
	}
	d.Total = len(peers)
	d.Allowed = AllowedUnhealthy(d.Total)
	for _, n := range peers {
		if IsUnhealthy(n, policies) {
			d.Unhealthy++
		}
	}
	d.Action = Repair
	if d.Unhealthy > d.Allowed {
		d.Action = Blocked
	}
	return d
}
