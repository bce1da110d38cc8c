package simulator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// Snapshot is everything the simulator needs to know about a cluster at one
// moment. Cluster state builds it in production, tests and `dovetail simulate`
// build it by hand. The simulator never modifies it. The order of its slices
// does not matter: the simulator sorts what it needs to, so that the plan does
// not depend on informer iteration order.
type Snapshot struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Nodes are the existing nodes and in-flight NodeClaims.
	Nodes []Node
	// NodePools are the pools new NodeClaims may come from.
	NodePools []NodePool
	// DaemonSets run a pod on every node they tolerate and select; new nodes
	// are sized for them.
	DaemonSets []*appsv1.DaemonSet
	// PersistentVolumes, PersistentVolumeClaims and StorageClasses used by the
	// pods' volumes, for volume topology.
	PersistentVolumes      []*corev1.PersistentVolume
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	StorageClasses         []*storagev1.StorageClass
	// Namespaces, for pod (anti-)affinity namespace selectors.
	Namespaces []*corev1.Namespace
	// Refused names, per pending pod (by UID), the existing nodes it is not
	// placed on: the hand-off of an earlier plan to the kube-scheduler gave
	// up on them (the scheduler kept refusing the pod there, for a reason
	// the simulation does not see, or the room went). A pod planned onto
	// such a node again could wait for it forever.
	Refused map[types.UID][]string
	// Deferred marks, by UID, pending pods placed after every other pod:
	// stand-ins for replicas not created yet, which must not take existing
	// room or a NodePool's limits from the pods that exist.
	Deferred map[types.UID]bool
}

// Node is an existing node or an in-flight NodeClaim that has no Node yet.
type Node struct {
	// Name identifies the node in the plan's placements.
	Name string
	// NodePool owns the node, or "" for nodes Dovetail does not manage.
	NodePool string
	// Labels of the node (for an in-flight claim, the labels it will get).
	Labels map[string]string
	// Taints of the node. For nodes that are not initialized, the taints a
	// node always has while starting (not-ready, unreachable, unregistered,
	// uninitialized) are ignored, since they go away on their own.
	Taints []corev1.Taint
	// Allocatable is what pods may use on the node.
	Allocatable corev1.ResourceList
	// Capacity is what the node counts against its NodePool's limits;
	// Allocatable is used when empty.
	Capacity corev1.ResourceList
	// Pods bound to the node, daemonset pods included.
	Pods []*corev1.Pod
	// InFlight marks a NodeClaim that has not registered a Node yet.
	InFlight bool
	// Initialized marks a node that is ready for pods. Daemonset pods are
	// expected on nodes that are not, and reserved for.
	Initialized bool
	// MarkedForDeletion marks a node being removed: nothing is placed on it
	// and its pods do not count for topology.
	MarkedForDeletion bool
	// Unschedulable marks a cordoned node: nothing is placed on it.
	Unschedulable bool
	// Disfavored marks a node consolidation means to remove (its
	// consolidation-candidate taint asks the kube-scheduler to prefer other
	// nodes): pods are placed on it only when no other existing node or
	// in-flight claim takes them, and before any new node.
	Disfavored bool
}

// NodePool is a NodePool with the instance types its cloud provider offers.
type NodePool struct {
	NodePool *v1.NodePool
	// InstanceTypes are all the types the provider returned for the pool,
	// including ones without an available offering.
	InstanceTypes []*cloudprovider.InstanceType
	// Usage is the capacity of the pool's existing and in-flight nodes, which
	// counts against spec.limits. When nil it is summed from Snapshot.Nodes.
	Usage corev1.ResourceList
}
