package handoff

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// spreadView is what the kube-scheduler's topology spread filter reads
// for one pod and one node: the nodes, the pods bound to them, and the
// pods nominated to the node.
type spreadView struct {
	// nodes are every Node; bound the pods of the pod's namespace bound to
	// a node (by node name); nominated the other waiting pods of the
	// namespace nominated to the node in question.
	nodes     []corev1.Node
	bound     map[string][]*corev1.Pod
	nominated []*corev1.Pod
}

// spreadAdmits reports whether the kube-scheduler's topology spread filter
// admits pod on node with the pods nominated there counted as running
// there, as its first filter pass does: for each DoNotSchedule constraint,
// the matching pods in the node's domain (bound, plus nominated to this
// node), plus the pod itself, may exceed the least-populated eligible
// domain by at most maxSkew. Nominating a pod it would not admit holds
// room for nothing; the pods of one spread group nominated together
// beyond that keep each other off the node for good. Callers hold the
// node's lock.
func (c *Controller) spreadAdmits(ctx context.Context, pod *corev1.Pod, node *corev1.Node) (bool, string, error) {
	if !podutil.HasRequiredSpread(pod) {
		return true, "", nil
	}
	view, err := c.spreadView(ctx, pod, node)
	if err != nil {
		return false, "", err
	}
	ok, why := view.admits(ctx, pod, node)
	return ok, why, nil
}

// spreadView reads what spreadAdmits needs from the cache, including this
// controller's nominations to the node that the cache has not shown yet.
func (c *Controller) spreadView(ctx context.Context, pod *corev1.Pod, node *corev1.Node) (*spreadView, error) {
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	pods := &corev1.PodList{}
	if err := c.kubeClient.List(ctx, pods, client.InNamespace(pod.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s: %w", pod.Namespace, err)
	}
	view := &spreadView{nodes: nodes.Items, bound: map[string][]*corev1.Pod{}}
	self := client.ObjectKeyFromObject(pod)
	counted := map[types.NamespacedName]bool{self: true}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || podutil.IsTerminal(p) {
			continue
		}
		switch {
		case p.Spec.NodeName != "":
			view.bound[p.Spec.NodeName] = append(view.bound[p.Spec.NodeName], p)
			counted[client.ObjectKeyFromObject(p)] = true
		case p.Status.NominatedNodeName == node.Name && !counted[client.ObjectKeyFromObject(p)]:
			view.nominated = append(view.nominated, p)
			counted[client.ObjectKeyFromObject(p)] = true
		}
	}
	// Nominations this controller wrote to the node that the cache shows
	// without them yet (or not at all).
	for key := range c.unseenOn(node.Name) {
		if counted[key] || key.Namespace != pod.Namespace {
			continue
		}
		cached := &corev1.Pod{}
		if err := c.kubeClient.Get(ctx, key, cached); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading pod %s: %w", key, err)
			}
			continue
		}
		if cached.Spec.NodeName == "" && cached.DeletionTimestamp == nil {
			view.nominated = append(view.nominated, cached)
			counted[key] = true
		}
	}
	return view, nil
}

// admits applies the filter to the view; why names the constraint that
// does not admit the node. Only the pod's own constraints are read: the
// scheduler's configured default constraints (for pods without any) are
// not known here.
func (v *spreadView) admits(ctx context.Context, pod *corev1.Pod, node *corev1.Node) (bool, string) {
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	// The scheduler counts only nodes that carry the topology keys of all
	// the pod's DoNotSchedule constraints.
	var keys []string
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			keys = append(keys, c.TopologyKey)
		}
	}
	hasKeys := func(n *corev1.Node) bool {
		for _, key := range keys {
			if _, ok := n.Labels[key]; !ok {
				return false
			}
		}
		return true
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		selector, err := spreadSelector(pod, c)
		if err != nil {
			return false, fmt.Sprintf("topology spread on %s: %v", c.TopologyKey, err)
		}
		domain, ok := node.Labels[c.TopologyKey]
		if !ok {
			return false, fmt.Sprintf("the node has no %s label", c.TopologyKey)
		}
		counts := map[string]int{}
		for i := range v.nodes {
			n := &v.nodes[i]
			value := n.Labels[c.TopologyKey]
			if !hasKeys(n) || !eligible(ctx, pod, affinity, c, n) {
				continue
			}
			if _, seen := counts[value]; !seen {
				counts[value] = 0
			}
			// As the scheduler, an empty selector counts no bound pod
			// (nominated pods it adds still match it).
			if selector.Empty() {
				continue
			}
			for _, p := range v.bound[n.Name] {
				if selector.Matches(labels.Set(p.Labels)) {
					counts[value]++
				}
			}
		}
		here := counts[domain]
		for _, p := range v.nominated {
			if selector.Matches(labels.Set(p.Labels)) {
				here++
			}
		}
		counts[domain] = here
		least := -1
		for _, n := range counts {
			if least < 0 || n < least {
				least = n
			}
		}
		if c.MinDomains != nil && len(counts) < int(*c.MinDomains) {
			least = 0
		}
		self := 0
		if selector.Matches(labels.Set(pod.Labels)) {
			self = 1
		}
		if skew := here + self - least; skew > int(c.MaxSkew) {
			return false, fmt.Sprintf("%s %s would hold %d matching pods with those nominated there, %d more than the least (maxSkew %d)",
				c.TopologyKey, domain, here+self, skew, c.MaxSkew)
		}
	}
	return true, ""
}

// spreadSelector is a constraint's label selector with its matchLabelKeys
// taken from the pod, as the kube-scheduler reads it.
func spreadSelector(pod *corev1.Pod, c corev1.TopologySpreadConstraint) (labels.Selector, error) {
	selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, key := range c.MatchLabelKeys {
		value, ok := pod.Labels[key]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(key, selection.Equals, []string{value})
		if err != nil {
			return nil, err
		}
		selector = selector.Add(*r)
	}
	return selector, nil
}

// eligible reports whether a node's pods count for a constraint: under
// nodeAffinityPolicy Honor (the default) the node must match the pod's
// required node affinity and selector, under nodeTaintsPolicy Honor (not
// the default) its taints must be tolerated.
func eligible(ctx context.Context, pod *corev1.Pod, affinity nodeaffinity.RequiredNodeAffinity, c corev1.TopologySpreadConstraint, node *corev1.Node) bool {
	if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
		if ok, err := affinity.Match(node); err != nil || !ok {
			return false
		}
	}
	if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.FromContext(ctx), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, true)
		if untolerated {
			return false
		}
	}
	return true
}
