package whatif

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// Changes are the what-ifs applied to a cluster before simulating.
type Changes struct {
	// Manifests are objects to add or replace (same kind, namespace and
	// name). A Deployment, StatefulSet or ReplicaSet becomes its replicas as
	// pending pods, replacing the pods of a workload of that name that the
	// cluster already runs.
	Manifests *Objects
	// RemoveNodes names Nodes (or NodeClaims) to take away; their pods,
	// other than DaemonSet pods, become pending.
	RemoveNodes []string
	// Scale sets workloads' replica counts.
	Scale []Scale
}

// Scale sets the replicas of a Deployment of the cluster.
type Scale struct {
	Namespace, Name string
	Replicas        int
}

// ParseScale reads "deployment/NAMESPACE/NAME=N" (or "deployment/NAME=N",
// in namespace default).
func ParseScale(s string) (Scale, error) {
	target, count, ok := strings.Cut(s, "=")
	if !ok {
		return Scale{}, fmt.Errorf("--scale %q: want deployment/NAMESPACE/NAME=REPLICAS", s)
	}
	var n int
	if _, err := fmt.Sscanf(count, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != count {
		return Scale{}, fmt.Errorf("--scale %q: replicas %q is not a non-negative integer", s, count)
	}
	parts := strings.Split(target, "/")
	if kind := strings.ToLower(parts[0]); kind != "deployment" && kind != "deployments" && kind != "deploy" {
		return Scale{}, fmt.Errorf("--scale %q: only deployments can be scaled", s)
	}
	switch len(parts) {
	case 2:
		return Scale{Namespace: corev1.NamespaceDefault, Name: parts[1], Replicas: n}, nil
	case 3:
		return Scale{Namespace: parts[1], Name: parts[2], Replicas: n}, nil
	}
	return Scale{}, fmt.Errorf("--scale %q: want deployment/NAMESPACE/NAME=REPLICAS", s)
}

// Apply returns a copy of o with the changes made.
func Apply(o *Objects, c Changes) (*Objects, error) {
	out := o.DeepCopy()
	for _, name := range c.RemoveNodes {
		if err := out.removeNode(name); err != nil {
			return nil, err
		}
	}
	for _, s := range c.Scale {
		if err := out.scale(s); err != nil {
			return nil, err
		}
	}
	if c.Manifests != nil {
		out.merge(c.Manifests.DeepCopy())
	}
	return out, nil
}

func (o *Objects) removeNode(name string) error {
	node := o.Node(name)
	claim := o.NodeClaim(name)
	switch {
	case node == nil && claim == nil:
		return fmt.Errorf("--remove-node %s: no Node or NodeClaim of that name", name)
	case node == nil:
		node = o.NodeOfClaim(claim)
	case claim == nil:
		claim = o.NodeClaimOfNode(node)
	}
	if claim != nil {
		o.NodeClaims = slices.DeleteFunc(o.NodeClaims, func(x *v1.NodeClaim) bool { return x == claim })
	}
	if node == nil {
		return nil
	}
	o.Nodes = slices.DeleteFunc(o.Nodes, func(x *corev1.Node) bool { return x == node })
	o.Pods = slices.DeleteFunc(o.Pods, func(p *corev1.Pod) bool {
		if p.Spec.NodeName != node.Name {
			return false
		}
		if podutil.IsOwnedByDaemonSet(p) || podutil.IsMirror(p) {
			return true
		}
		unbind(p)
		return false
	})
	return nil
}

// unbind makes a pod pending, as its controller's replacement would be.
func unbind(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
}

func (o *Objects) scale(s Scale) error {
	var d *appsv1.Deployment
	for _, x := range o.Deployments {
		if x.Namespace == s.Namespace && x.Name == s.Name {
			d = x
		}
	}
	if d == nil {
		return fmt.Errorf("--scale: deployment %s/%s not found", s.Namespace, s.Name)
	}
	d.Spec.Replicas = new(int32(s.Replicas))
	pods, err := o.podsOf(d.Namespace, d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("--scale: deployment %s/%s: %w", s.Namespace, s.Name, err)
	}
	if len(pods) > s.Replicas {
		// Like a ReplicaSet scaling down: pending pods go first.
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
			if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
				if a.Spec.NodeName == "" {
					return -1
				}
				return 1
			}
			return strings.Compare(b.Name, a.Name)
		})
		drop := pods[:len(pods)-s.Replicas]
		o.Pods = slices.DeleteFunc(o.Pods, func(p *corev1.Pod) bool { return slices.Contains(drop, p) })
		return nil
	}
	o.Pods = append(o.Pods, expand(d.Namespace, d.Name, "ReplicaSet", d.Spec.Template, s.Replicas-len(pods), len(pods))...)
	return nil
}

// podsOf returns the live pods of a namespace that a selector matches.
func (o *Objects) podsOf(namespace string, selector *metav1.LabelSelector) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("reading selector: %w", err)
	}
	var out []*corev1.Pod
	for _, p := range o.Pods {
		if p.Namespace == namespace && sel.Matches(labels.Set(p.Labels)) && !podutil.IsTerminal(p) && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// expand makes n pending pods of a template, numbered from first.
func expand(namespace, name, ownerKind string, tmpl corev1.PodTemplateSpec, n, first int) []*corev1.Pod {
	owner := name + "-whatif"
	if ownerKind == "StatefulSet" {
		owner = name
	}
	out := make([]*corev1.Pod, 0, max(n, 0))
	for i := first; i < first+n; i++ {
		podName := fmt.Sprintf("%s-whatif-%d", name, i)
		if ownerKind == "StatefulSet" {
			podName = fmt.Sprintf("%s-%d", name, i)
		}
		pod := &corev1.Pod{
			ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
			Spec:       *tmpl.Spec.DeepCopy(),
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
		pod.Name, pod.Namespace = podName, namespace
		pod.UID = types.UID("whatif/" + namespace + "/" + podName)
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: ownerKind, Name: owner, UID: types.UID("whatif/" + namespace + "/" + owner),
			Controller: new(true),
		}}
		out = append(out, pod)
	}
	return out
}

// merge adds or replaces the objects of x.
func (o *Objects) merge(x *Objects) {
	for _, n := range x.Nodes {
		o.Nodes = slices.DeleteFunc(o.Nodes, func(e *corev1.Node) bool { return e.Name == n.Name })
		o.Nodes = append(o.Nodes, n)
	}
	for _, nc := range x.NodeClaims {
		o.NodeClaims = slices.DeleteFunc(o.NodeClaims, func(e *v1.NodeClaim) bool { return e.Name == nc.Name })
		o.NodeClaims = append(o.NodeClaims, nc)
	}
	for _, np := range x.NodePools {
		o.NodePools = slices.DeleteFunc(o.NodePools, func(e *v1.NodePool) bool { return e.Name == np.Name })
		o.NodePools = append(o.NodePools, np)
	}
	for _, nc := range x.NodeClasses {
		o.NodeClasses = slices.DeleteFunc(o.NodeClasses, func(e *unstructured.Unstructured) bool {
			return e.GetKind() == nc.GetKind() && e.GetName() == nc.GetName()
		})
		o.NodeClasses = append(o.NodeClasses, nc)
	}
	for _, no := range x.NodeOverlays {
		o.NodeOverlays = slices.DeleteFunc(o.NodeOverlays, func(e *v1alpha1.NodeOverlay) bool { return e.Name == no.Name })
		o.NodeOverlays = append(o.NodeOverlays, no)
	}
	for _, p := range x.Pods {
		defaultNamespace(&p.ObjectMeta)
		if p.UID == "" {
			p.UID = types.UID("whatif/" + p.Namespace + "/" + p.Name)
		}
		o.Pods = slices.DeleteFunc(o.Pods, func(e *corev1.Pod) bool { return e.Namespace == p.Namespace && e.Name == p.Name })
		o.Pods = append(o.Pods, p)
	}
	for _, d := range x.Deployments {
		defaultNamespace(&d.ObjectMeta)
		o.replaceWorkload(d.Namespace, d.Name, d.Spec.Selector, replicas(d.Spec.Replicas), "ReplicaSet", d.Spec.Template)
		o.Deployments = slices.DeleteFunc(o.Deployments, func(e *appsv1.Deployment) bool { return e.Namespace == d.Namespace && e.Name == d.Name })
		o.Deployments = append(o.Deployments, d)
	}
	for _, s := range x.StatefulSets {
		defaultNamespace(&s.ObjectMeta)
		o.replaceWorkload(s.Namespace, s.Name, s.Spec.Selector, replicas(s.Spec.Replicas), "StatefulSet", s.Spec.Template)
	}
	for _, r := range x.ReplicaSets {
		defaultNamespace(&r.ObjectMeta)
		o.replaceWorkload(r.Namespace, r.Name, r.Spec.Selector, replicas(r.Spec.Replicas), "ReplicaSet", r.Spec.Template)
	}
	for _, ds := range x.DaemonSets {
		defaultNamespace(&ds.ObjectMeta)
		o.DaemonSets = slices.DeleteFunc(o.DaemonSets, func(e *appsv1.DaemonSet) bool { return e.Namespace == ds.Namespace && e.Name == ds.Name })
		o.DaemonSets = append(o.DaemonSets, ds)
	}
	o.PDBs = append(o.PDBs, x.PDBs...)
	o.PersistentVolumeClaims = append(o.PersistentVolumeClaims, x.PersistentVolumeClaims...)
	o.PersistentVolumes = append(o.PersistentVolumes, x.PersistentVolumes...)
	o.StorageClasses = append(o.StorageClasses, x.StorageClasses...)
	o.Namespaces = append(o.Namespaces, x.Namespaces...)
}

// replaceWorkload drops the pods a workload's selector matches and adds
// its replicas as pending pods, as a rollout of the new template would.
func (o *Objects) replaceWorkload(namespace, name string, selector *metav1.LabelSelector, n int, ownerKind string, tmpl corev1.PodTemplateSpec) {
	if old, err := o.podsOf(namespace, selector); err == nil && selector != nil {
		o.Pods = slices.DeleteFunc(o.Pods, func(p *corev1.Pod) bool { return slices.Contains(old, p) })
	}
	o.Pods = append(o.Pods, expand(namespace, name, ownerKind, tmpl, n, 0)...)
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

func defaultNamespace(m *metav1.ObjectMeta) {
	if m.Namespace == "" {
		m.Namespace = corev1.NamespaceDefault
	}
}
