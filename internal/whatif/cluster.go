package whatif

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// CatalogInstanceTypes returns the instance types simulate and explain
// offer every NodePool: the embedded EC2 catalog in its default view
// (AL2023, us-east-1a/b/c), as the kwok provider offers them.
func CatalogInstanceTypes() ([]*cloudprovider.InstanceType, error) {
	its, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		return nil, fmt.Errorf("loading the instance-type catalog: %w", err)
	}
	return ec2types.FromCatalog(its), nil
}

// fixedClock is a passive clock stopped at one instant: a simulation is
// taken at one moment.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                  { return c.now }
func (c fixedClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }

// model is a cluster loaded into the controllers' structures.
type model struct {
	objs    *Objects
	now     time.Time
	cluster *state.Cluster
	// pools are every NodePool with its instance types, its readiness set
	// as the readiness controller would set it; ready are the ones that
	// may launch, in weight order.
	pools []simulator.NodePool
	ready []simulator.NodePool
	// notReady says why each pool that may not launch may not.
	notReady map[string]string
	// static holds, per static NodePool (spec.replicas), why it launches
	// nothing for pending pods: only its replica count launches.
	static map[string]string
	// over holds the instance types each NodePool is offered: the
	// simulation's, with the cluster's NodeOverlays applied as the
	// decorator applies them.
	over    *Overlaid
	pending []*corev1.Pod
}

// newModel feeds the objects to a cluster-state model, as the informers
// do, and derives every NodePool's readiness.
func newModel(o *Objects, now time.Time, types []*cloudprovider.InstanceType) *model {
	m := &model{objs: o, now: now, cluster: state.NewCluster(fixedClock{now}), over: OverlayInstanceTypes(o, types),
		notReady: map[string]string{}, static: map[string]string{}}
	for _, n := range o.Nodes {
		m.cluster.UpdateNode(n)
	}
	for _, nc := range o.NodeClaims {
		m.cluster.UpdateNodeClaim(nc)
	}
	for _, ds := range o.DaemonSets {
		m.cluster.UpdateDaemonSet(ds)
	}
	for _, p := range o.Pods {
		m.cluster.UpdatePod(p)
		m.cluster.UpdateDaemonSetPod(p)
	}
	var ready []*v1.NodePool
	for _, np := range o.NodePools {
		setReadiness(np, o.NodeClasses, now)
		m.pools = append(m.pools, simulator.NodePool{NodePool: np, InstanceTypes: m.over.InstanceTypes(np.Name)})
		if nodepoolutil.IsReady(np) && np.IsStatic() {
			m.static[np.Name] = fmt.Sprintf("NodePool is static (spec.replicas %d): it keeps its node count and launches no node for pending pods", *np.Spec.Replicas)
		} else if nodepoolutil.IsReady(np) {
			ready = append(ready, np)
		} else if c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionTypeReady); c != nil {
			m.notReady[np.Name] = fmt.Sprintf("NodePool is not ready (%s): %s", c.Reason, c.Message)
		} else {
			m.notReady[np.Name] = "NodePool is not ready"
		}
	}
	nodepoolutil.SortByWeight(ready)
	for _, np := range ready {
		m.ready = append(m.ready, simulator.NodePool{NodePool: np, InstanceTypes: m.over.InstanceTypes(np.Name)})
	}
	m.pending = m.pendingPods()
	return m
}

// setReadiness sets a NodePool's NodeClassReady and Ready conditions with
// the readiness controller's reasons and messages, from the NodeClass of
// the objects. A pool whose NodeClass the objects do not hold keeps the
// Ready condition it has (a snapshot may leave NodeClasses out); without
// one it is not ready.
func setReadiness(np *v1.NodePool, classes []*unstructured.Unstructured, now time.Time) {
	if np.DeletionTimestamp != nil {
		return
	}
	set := func(status metav1.ConditionStatus, reason, message string) {
		for _, t := range []string{v1.ConditionTypeNodeClassReady, v1.ConditionTypeReady} {
			r := reason
			if t == v1.ConditionTypeReady && status == metav1.ConditionTrue {
				r = "Ready"
			}
			meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: r, Message: message,
				ObservedGeneration: np.Generation, LastTransitionTime: metav1.NewTime(now)})
		}
	}
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		set(metav1.ConditionFalse, "NodeClassNotFound", "spec.template.spec.nodeClassRef is not set")
		return
	}
	group, _, _ := strings.Cut(ref.Group, "/")
	supported := false
	var names []string
	for _, gvk := range nodeClassKinds {
		supported = supported || gvk.Group == group && gvk.Kind == ref.Kind
		names = append(names, gvk.Kind+"."+gvk.Group)
	}
	if !supported {
		set(metav1.ConditionFalse, "UnsupportedNodeClass", fmt.Sprintf("NodeClass %s.%s is not supported by the %s cloud provider (supported: %s)",
			ref.Kind, ref.Group, "simulated", strings.Join(names, ", ")))
		return
	}
	i := slices.IndexFunc(classes, func(u *unstructured.Unstructured) bool {
		return u.GetKind() == ref.Kind && u.GroupVersionKind().Group == group && u.GetName() == ref.Name
	})
	if i < 0 {
		if !nodepoolutil.IsReady(np) {
			set(metav1.ConditionFalse, "NodeClassNotFound", fmt.Sprintf("%s %q not found", ref.Kind, ref.Name))
		}
		return
	}
	conditions, _, _ := unstructured.NestedSlice(classes[i].Object, "status", "conditions")
	for _, raw := range conditions {
		c, _ := raw.(map[string]any)
		if c["type"] != "Ready" {
			continue
		}
		if c["status"] == string(metav1.ConditionTrue) {
			set(metav1.ConditionTrue, "NodeClassReady", "")
			return
		}
		message, _ := c["message"].(string)
		set(metav1.ConditionFalse, "NodeClassNotReady", fmt.Sprintf("%s %q is not ready: %s", ref.Kind, ref.Name, message))
		return
	}
	set(metav1.ConditionFalse, "NodeClassNotReady", fmt.Sprintf("%s %q has no Ready condition yet", ref.Kind, ref.Name))
}

// pendingPods are the pods provisioning would simulate: unbound pods that
// the kube-scheduler has not placed (whether or not it has marked them yet;
// a pod added by a what-if has no status), that the model does not already
// count on a machine, plus the reschedulable pods of machines being
// deleted.
func (m *model) pendingPods() []*corev1.Pod {
	snapshot := m.cluster.Snapshot(nil, m.ready)
	counted := provisioning.CountedPods(snapshot)
	var out []*corev1.Pod
	for _, pod := range m.objs.Pods {
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || podutil.IsTerminal(pod) || podutil.IsOwnedByDaemonSet(pod) ||
			podutil.IsMirror(pod) || counted[pod.UID] {
			continue
		}
		out = append(out, pod)
	}
	return append(out, provisioning.PodsOfDeletingNodes(snapshot)...)
}

// snapshot builds the simulator's input as provisioning does: the model's
// machines, the given pods, the ready pools, volumes and namespaces.
func (m *model) snapshot(pods []*corev1.Pod, pools []simulator.NodePool) *simulator.Snapshot {
	s := m.cluster.Snapshot(pods, pools)
	s.PersistentVolumeClaims = m.objs.PersistentVolumeClaims
	s.PersistentVolumes = m.objs.PersistentVolumes
	s.StorageClasses = m.objs.StorageClasses
	s.Namespaces = m.objs.Namespaces
	return s
}

// disruptionInput is what the disruption controller decides on.
func (m *model) disruptionInput() disruption.Input {
	return disruption.Input{
		Now:                    m.now,
		Nodes:                  m.cluster.Nodes(),
		NodePools:              m.pools,
		DaemonSets:             m.cluster.DaemonSets(),
		PDBs:                   m.objs.PDBs,
		PendingPods:            m.pending,
		PersistentVolumes:      m.objs.PersistentVolumes,
		PersistentVolumeClaims: m.objs.PersistentVolumeClaims,
		StorageClasses:         m.objs.StorageClasses,
		Namespaces:             m.objs.Namespaces,
	}
}

// price is the hourly price of the offering a node's labels name, as its
// NodePool is offered it (NodeOverlays applied), and whether the catalog
// knows it.
func (m *model) price(labels map[string]string) (float64, bool) {
	name, zone, ct := labels[corev1.LabelInstanceTypeStable], labels[corev1.LabelTopologyZone], labels[v1.CapacityTypeLabelKey]
	it := m.over.InstanceType(labels[v1.NodePoolLabelKey], name)
	if it == nil {
		return 0, false
	}
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == ct {
			return o.Price, true
		}
	}
	return 0, false
}

// priceOverlaid reports whether a NodeOverlay set the price of the
// offering a node's labels name.
func (m *model) priceOverlaid(labels map[string]string) bool {
	return m.over.PriceOverlaid(labels[v1.NodePoolLabelKey], labels[corev1.LabelInstanceTypeStable], labels[corev1.LabelTopologyZone],
		labels[v1.CapacityTypeLabelKey])
}

// offering is the cheapest available offering of a planned claim's first
// instance type that its requirements allow.
func offering(c *simulator.NewNodeClaim) (cloudprovider.Offering, bool) {
	if len(c.InstanceTypes) == 0 {
		return cloudprovider.Offering{}, false
	}
	return c.InstanceTypes[0].CheapestOffering(func(o cloudprovider.Offering) bool {
		if r, ok := c.Requirements.Get(corev1.LabelTopologyZone); ok && !r.Has(o.Zone) {
			return false
		}
		if r, ok := c.Requirements.Get(v1.CapacityTypeLabelKey); ok && !r.Has(o.CapacityType) {
			return false
		}
		return true
	})
}
