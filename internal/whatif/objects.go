package whatif

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
)

// Objects are the objects of a cluster that Dovetail's decisions read.
// Workloads (Deployments, StatefulSets, ReplicaSets) are only kept so that
// `--scale` and manifests can add or remove their pods.
type Objects struct {
	Nodes       []*corev1.Node
	NodeClaims  []*v1.NodeClaim
	NodePools   []*v1.NodePool
	NodeClasses []*unstructured.Unstructured
	// NodeOverlays change the prices and extended resources of the
	// instance types each NodePool is offered, as the controllers apply them.
	NodeOverlays []*v1alpha1.NodeOverlay
	Pods         []*corev1.Pod
	DaemonSets   []*appsv1.DaemonSet
	Deployments  []*appsv1.Deployment
	// StatefulSets and ReplicaSets given as changes add pods like Deployments.
	StatefulSets           []*appsv1.StatefulSet
	ReplicaSets            []*appsv1.ReplicaSet
	PDBs                   []*policyv1.PodDisruptionBudget
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	Namespaces             []*corev1.Namespace
}

// nodeClassKinds are the NodeClass kinds a snapshot may hold.
var nodeClassKinds = []schema.GroupVersionKind{
	{Group: "karpenter.k8s.aws", Version: "v1", Kind: "EC2NodeClass"},
	{Group: "karpenter.kwok.sh", Version: "v1alpha1", Kind: "KWOKNodeClass"},
}

// NodeClassKinds lists the NodeClass kinds a snapshot may hold (simulate
// prices every one of them with the EC2 catalog).
func NodeClassKinds() []schema.GroupVersionKind {
	return append([]schema.GroupVersionKind(nil), nodeClassKinds...)
}

// Count is the number of objects of every kind.
func (o *Objects) Count() int {
	return len(o.Nodes) + len(o.NodeClaims) + len(o.NodePools) + len(o.NodeClasses) + len(o.NodeOverlays) + len(o.Pods) + len(o.DaemonSets) +
		len(o.Deployments) + len(o.StatefulSets) + len(o.ReplicaSets) + len(o.PDBs) + len(o.PersistentVolumeClaims) +
		len(o.PersistentVolumes) + len(o.StorageClasses) + len(o.Namespaces)
}

// DeepCopy copies every object, so that changes applied to the copy leave
// the original alone.
func (o *Objects) DeepCopy() *Objects {
	out := &Objects{}
	for _, x := range o.Nodes {
		out.Nodes = append(out.Nodes, x.DeepCopy())
	}
	for _, x := range o.NodeClaims {
		out.NodeClaims = append(out.NodeClaims, x.DeepCopy())
	}
	for _, x := range o.NodePools {
		out.NodePools = append(out.NodePools, x.DeepCopy())
	}
	for _, x := range o.NodeClasses {
		out.NodeClasses = append(out.NodeClasses, x.DeepCopy())
	}
	for _, x := range o.NodeOverlays {
		out.NodeOverlays = append(out.NodeOverlays, x.DeepCopy())
	}
	for _, x := range o.Pods {
		out.Pods = append(out.Pods, x.DeepCopy())
	}
	for _, x := range o.DaemonSets {
		out.DaemonSets = append(out.DaemonSets, x.DeepCopy())
	}
	for _, x := range o.Deployments {
		out.Deployments = append(out.Deployments, x.DeepCopy())
	}
	for _, x := range o.StatefulSets {
		out.StatefulSets = append(out.StatefulSets, x.DeepCopy())
	}
	for _, x := range o.ReplicaSets {
		out.ReplicaSets = append(out.ReplicaSets, x.DeepCopy())
	}
	for _, x := range o.PDBs {
		out.PDBs = append(out.PDBs, x.DeepCopy())
	}
	for _, x := range o.PersistentVolumeClaims {
		out.PersistentVolumeClaims = append(out.PersistentVolumeClaims, x.DeepCopy())
	}
	for _, x := range o.PersistentVolumes {
		out.PersistentVolumes = append(out.PersistentVolumes, x.DeepCopy())
	}
	for _, x := range o.StorageClasses {
		out.StorageClasses = append(out.StorageClasses, x.DeepCopy())
	}
	for _, x := range o.Namespaces {
		out.Namespaces = append(out.Namespaces, x.DeepCopy())
	}
	return out
}

// Node returns the Node of that name.
func (o *Objects) Node(name string) *corev1.Node {
	for _, n := range o.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// NodeClaim returns the NodeClaim of that name.
func (o *Objects) NodeClaim(name string) *v1.NodeClaim {
	for _, nc := range o.NodeClaims {
		if nc.Name == name {
			return nc
		}
	}
	return nil
}

// NodePool returns the NodePool of that name.
func (o *Objects) NodePool(name string) *v1.NodePool {
	for _, np := range o.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// Pod returns the pod of that namespace and name.
func (o *Objects) Pod(namespace, name string) *corev1.Pod {
	for _, p := range o.Pods {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// NodeClaimOfNode returns the NodeClaim whose status names the node (by
// node name or provider ID).
func (o *Objects) NodeClaimOfNode(node *corev1.Node) *v1.NodeClaim {
	for _, nc := range o.NodeClaims {
		if nc.Status.NodeName == node.Name || node.Spec.ProviderID != "" && nc.Status.ProviderID == node.Spec.ProviderID {
			return nc
		}
	}
	return nil
}

// NodeOfClaim returns the Node of a NodeClaim, or nil while it is in flight.
func (o *Objects) NodeOfClaim(nc *v1.NodeClaim) *corev1.Node {
	for _, n := range o.Nodes {
		if nc.Status.NodeName != "" && n.Name == nc.Status.NodeName || nc.Status.ProviderID != "" && n.Spec.ProviderID == nc.Status.ProviderID {
			return n
		}
	}
	return nil
}
