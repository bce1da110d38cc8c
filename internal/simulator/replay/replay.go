package replay

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// Problem is a plan as the kube-scheduler would see it once every NodeClaim
// has launched: nodes, the pods already bound to them, and the pods to bind,
// in order, each to its planned node.
type Problem struct {
	// Name identifies the problem in reports (a test or workload name).
	Name string `json:"name"`
	// Nodes are the existing nodes (those not being deleted) followed by the
	// plan's new NodeClaims, materialised.
	Nodes []*corev1.Node `json:"nodes"`
	// Bound are the pods already on the nodes (spec.nodeName set), with the
	// daemonset pods each new node will run.
	Bound []*corev1.Pod `json:"bound"`
	// Bindings are the plan's pods in the plan's Sequence, each with the node
	// it is planned for.
	Bindings []Binding `json:"bindings"`
	// Claims describe the new nodes: which offering each launches as.
	Claims []Claim `json:"claims"`
	// Namespaces, PersistentVolumes, PersistentVolumeClaims and
	// StorageClasses of the snapshot, for the plugins that read them.
	Namespaces             []*corev1.Namespace             `json:"namespaces,omitempty"`
	PersistentVolumes      []*corev1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	StorageClasses         []*storagev1.StorageClass       `json:"storageClasses,omitempty"`
}

// Binding is one pod and the node the plan put it on.
type Binding struct {
	// Pod to bind (spec.nodeName unset).
	Pod *corev1.Pod `json:"pod"`
	// Node is the planned node's name.
	Node string `json:"node"`
}

// Claim is a new node of the plan and the offering it launches as.
type Claim struct {
	// Node is the materialised node's name.
	Node string `json:"node"`
	// InstanceType, Zone and CapacityType name the offering: the claim's
	// cheapest instance type at its cheapest available offering the claim's
	// requirements allow (the earliest offering on a tie).
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	CapacityType string `json:"capacityType"`
	// Price is that offering's hourly price, and PlanPrice the claim's Price
	// in the plan.
	Price     float64 `json:"price"`
	PlanPrice float64 `json:"planPrice"`
	// Zones are the zones the claim's requirements and types allow; more than
	// one means the provider may launch it in any of them.
	Zones []string `json:"zones"`
}

// Materialize builds the binding problem for the plan a solve of req against
// snapshot snap returned. Nodes req removes, and nodes marked for deletion,
// are left out; pods req moves are bindings, not bound pods.
func Materialize(name string, snap *simulator.Snapshot, req simulator.Request, plan *simulator.Plan) (*Problem, error) {
	pr := &Problem{
		Name: name, Namespaces: snap.Namespaces, PersistentVolumes: snap.PersistentVolumes,
		PersistentVolumeClaims: snap.PersistentVolumeClaims, StorageClasses: snap.StorageClasses,
	}
	planned := map[*corev1.Pod]string{}
	for _, p := range plan.Placements {
		planned[p.Pod] = p.Node
	}
	moving := map[*corev1.Pod]bool{}
	for _, p := range req.Pods {
		moving[p] = true
	}
	pools := map[string]*v1.NodePool{}
	for _, p := range snap.NodePools {
		if p.NodePool != nil {
			pools[p.NodePool.Name] = p.NodePool
		}
	}
	// A name is the first node that has it, initialized nodes first, as in
	// the simulator.
	nodes := slices.Clone(snap.Nodes)
	slices.SortStableFunc(nodes, func(a, b simulator.Node) int {
		if a.Initialized != b.Initialized {
			if a.Initialized {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	seen := map[string]bool{}
	for _, n := range nodes {
		if seen[n.Name] || n.MarkedForDeletion || slices.Contains(req.RemoveNodes, n.Name) {
			continue
		}
		seen[n.Name] = true
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: maps.Clone(n.Labels)},
			Spec:       corev1.NodeSpec{Taints: settledTaints(n, pools[n.NodePool]), Unschedulable: n.Unschedulable},
			Status:     corev1.NodeStatus{Allocatable: n.Allocatable.DeepCopy(), Capacity: n.Allocatable.DeepCopy()},
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		if _, ok := node.Labels[corev1.LabelHostname]; !ok {
			node.Labels[corev1.LabelHostname] = n.Name
		}
		pr.Nodes = append(pr.Nodes, node)
		for _, p := range n.Pods {
			if !moving[p] {
				pr.Bound = append(pr.Bound, bound(p, n.Name))
			}
		}
	}
	var errs []error
	for i, c := range plan.NewNodeClaims {
		name := fmt.Sprintf("claim-%04d", i)
		node, claim, err := materializeClaim(name, c, pools[c.NodePool])
		if err != nil {
			errs = append(errs, fmt.Errorf("claim %d: %w", i, err))
			continue
		}
		pr.Nodes = append(pr.Nodes, node)
		pr.Claims = append(pr.Claims, claim)
		for _, ds := range snap.DaemonSets {
			if p := daemonPod(ds, node); p != nil {
				pr.Bound = append(pr.Bound, p)
			}
		}
		for _, p := range c.Pods {
			planned[p] = name
		}
	}
	for _, p := range plan.Sequence {
		node, ok := planned[p]
		if !ok {
			errs = append(errs, fmt.Errorf("pod %s/%s is in the plan's sequence but neither placed nor on a claim", p.Namespace, p.Name))
			continue
		}
		pr.Bindings = append(pr.Bindings, Binding{Pod: p, Node: node})
		delete(planned, p)
	}
	for p := range planned {
		errs = append(errs, fmt.Errorf("pod %s/%s is planned but missing from the plan's sequence", p.Namespace, p.Name))
	}
	return pr, errors.Join(errs...)
}

// settledTaints are a node's taints once it has initialized: a starting
// node sheds the taints every starting node has and its NodePool's startup
// taints on its own, so the plan may count on their going (as the simulator
// does).
func settledTaints(n simulator.Node, pool *v1.NodePool) []corev1.Taint {
	if n.Initialized {
		return slices.Clone(n.Taints)
	}
	var out []corev1.Taint
	for _, t := range n.Taints {
		if slices.Contains(v1.KnownEphemeralTaintKeys, t.Key) {
			continue
		}
		if pool != nil && slices.ContainsFunc(pool.Spec.Template.Spec.StartupTaints, func(st corev1.Taint) bool { return st.MatchTaint(&t) }) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func bound(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// materializeClaim builds the node a new NodeClaim launches as.
func materializeClaim(name string, c *simulator.NewNodeClaim, pool *v1.NodePool) (*corev1.Node, Claim, error) {
	if len(c.InstanceTypes) == 0 {
		return nil, Claim{}, errors.New("no instance types")
	}
	it := c.InstanceTypes[0]
	allowed := func(o cloudprovider.Offering) bool {
		return has(c, corev1.LabelTopologyZone, o.Zone) && has(c, v1.CapacityTypeLabelKey, o.CapacityType)
	}
	off, ok := it.CheapestOffering(allowed)
	if !ok {
		return nil, Claim{}, fmt.Errorf("instance type %s has no available offering the claim's requirements allow", it.Name)
	}
	var zones []string
	for _, t := range c.InstanceTypes {
		for _, o := range t.Offerings {
			if o.Available && allowed(o) && !slices.Contains(zones, o.Zone) {
				zones = append(zones, o.Zone)
			}
		}
	}
	slices.Sort(zones)
	labels := map[string]string{}
	var taints []corev1.Taint
	if pool != nil {
		maps.Copy(labels, pool.Spec.Template.ObjectMeta.Labels)
		taints = slices.Clone(pool.Spec.Template.Spec.Taints)
	}
	maps.Copy(labels, it.Requirements.Labels())
	maps.Copy(labels, c.Requirements.Labels())
	labels[corev1.LabelTopologyZone] = off.Zone
	labels[v1.CapacityTypeLabelKey] = off.CapacityType
	labels[corev1.LabelInstanceTypeStable] = it.Name
	labels[corev1.LabelHostname] = name
	labels[v1.NodePoolLabelKey] = c.NodePool
	alloc := it.Allocatable().DeepCopy()
	if _, ok := alloc[corev1.ResourcePods]; !ok {
		alloc[corev1.ResourcePods] = *resource.NewQuantity(110, resource.DecimalSI)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: it.Capacity.DeepCopy()},
	}
	claim := Claim{
		Node: name, InstanceType: it.Name, Zone: off.Zone, CapacityType: off.CapacityType,
		Price: off.Price, PlanPrice: c.Price, Zones: zones,
	}
	return node, claim, nil
}

func has(c *simulator.NewNodeClaim, key, value string) bool {
	r, ok := c.Requirements.Get(key)
	return !ok || r.Has(value)
}

// daemonPod returns the pod daemonset ds runs on node, or nil when the
// daemonset's template does not tolerate the node's NoSchedule and NoExecute
// taints or does not select the node.
func daemonPod(ds *appsv1.DaemonSet, node *corev1.Node) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	p.Namespace, p.Name = ds.Namespace, ds.Name+"-"+node.Name
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return nil
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(node); err != nil || !ok {
		return nil
	}
	p.Spec.NodeName = node.Name
	return p
}
