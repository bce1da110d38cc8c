package machine

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// NewSnapshot builds the simulator's input from machines as the cluster-state
// model returns them, so that a caller that already holds those copies (the
// disruption controller, which must simulate on exactly the nodes it chose
// candidates from, or a benchmark) gets the same snapshot Cluster.Snapshot
// (internal/state) would build.
func NewSnapshot(nodes []*Machine, daemonSets []*appsv1.DaemonSet, pods []*corev1.Pod, pools []simulator.NodePool) *simulator.Snapshot {
	types := instanceTypesByPool(pools)
	snapshot := &simulator.Snapshot{
		Pods:       pods,
		NodePools:  pools,
		DaemonSets: daemonSets,
		Nodes:      make([]simulator.Node, 0, len(nodes)),
	}
	for _, n := range nodes {
		if n.awaitingRegistration() {
			continue
		}
		capacity := n.Capacity()
		if len(capacity) == 0 && n.NodeClaim != nil {
			capacity = maxCapacity(n, types[n.NodePoolName()])
		}
		taints := n.Taints()
		disfavored := slices.ContainsFunc(taints, IsConsolidationCandidateTaint)
		if disfavored {
			taints = slices.DeleteFunc(slices.Clone(taints), IsConsolidationCandidateTaint)
		}
		snapshot.Nodes = append(snapshot.Nodes, simulator.Node{
			Name:              n.Name(),
			NodePool:          n.NodePoolName(),
			Labels:            n.Labels(),
			Taints:            taints,
			Disfavored:        disfavored,
			Allocatable:       n.Allocatable(),
			Capacity:          capacity,
			Pods:              n.Pods,
			InFlight:          n.InFlight(),
			Initialized:       n.Initialized(),
			MarkedForDeletion: n.MarkedForDeletion,
			Unschedulable:     n.Node != nil && n.Node.Spec.Unschedulable,
		})
	}
	return snapshot
}

func instanceTypesByPool(pools []simulator.NodePool) map[string]map[string]*cloudprovider.InstanceType {
	out := make(map[string]map[string]*cloudprovider.InstanceType, len(pools))
	for _, p := range pools {
		byName := make(map[string]*cloudprovider.InstanceType, len(p.InstanceTypes))
		for _, it := range p.InstanceTypes {
			byName[it.Name] = it
		}
		out[p.NodePool.Name] = byName
	}
	return out
}

// maxCapacity is the per-resource maximum capacity over the claim's
// node.kubernetes.io/instance-type options; the claim's requests when the
// options are unknown.
func maxCapacity(n *Machine, types map[string]*cloudprovider.InstanceType) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range n.NodeClaim.Spec.Requirements {
		if r.Key != corev1.LabelInstanceTypeStable || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		for _, name := range r.Values {
			it, ok := types[name]
			if !ok {
				continue
			}
			for res, q := range it.Capacity {
				if cur, ok := out[res]; !ok || q.Cmp(cur) > 0 {
					out[res] = q.DeepCopy()
				}
			}
		}
	}
	if len(out) == 0 {
		for res, q := range n.NodeClaim.Spec.Resources.Requests {
			out[res] = q.DeepCopy()
		}
	}
	return out
}

// awaitingRegistration reports a Node that a cloud provider created for a
// NodeClaim the model cannot link it to yet: the claim's status has no
// providerID (its launch was interrupted, e.g. by a controller restart, and
// the lifecycle controller has not recorded it again). Until registration
// the Node carries the unregistered taint and takes no pods; its capacity is
// already counted through the in-flight NodeClaim, and counting the Node as
// well would present the same machine twice, once under a stale taint.
func (n *Machine) awaitingRegistration() bool {
	if n.NodeClaim != nil || n.Node == nil {
		return false
	}
	return slices.ContainsFunc(n.Node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey })
}
