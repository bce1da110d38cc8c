package simulator_test

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// fidelity is what an independent replay of a plan found. The replay reads
// only the materialised problem (nodes, bound pods, bindings in the plan's
// order) and re-implements the kube-scheduler's rules for zone-like keys
// from their documentation, sharing no code with the simulator:
//   - topology spread (DoNotSchedule) on every key but the hostname, checked
//     as each pod binds: matching pods in the node's domain, plus one if the
//     pod matches itself, minus the fewest in any eligible domain (0 with
//     fewer domains than minDomains), at most maxSkew; pods and domains
//     count only on nodes that match the pod's node affinity
//     (nodeAffinityPolicy Honor, the default) and whose NoSchedule and
//     NoExecute taints it tolerates (nodeTaintsPolicy Honor);
//   - required pod affinity on every key but the hostname: the node's domain
//     holds a matching pod, or none exists anywhere and the pod matches
//     its own term.
//
// The kube-scheduler oracle (test/oracle) checks everything else, with the
// scheduler's own code.
type fidelity struct {
	pods            int
	spreadViolation int      // pods whose zonal spread fails when they bind
	affinityBroken  int      // pods whose zonal affinity fails when they bind
	zonelessClaims  int      // claims free to launch in several zones that hold pods zonal groups count
	zonelessPods    int      // the pods on them
	balance         float64  // the worst max/min pods per zone over the spread selectors
	costMismatch    string   // plan cost differs from the claims' cheapest offerings
	first           []string // the first few problems, for messages
}

func (f *fidelity) problem(format string, args ...any) {
	if len(f.first) < 5 {
		f.first = append(f.first, fmt.Sprintf(format, args...))
	}
}

func (f fidelity) String() string {
	return fmt.Sprintf("%d pods: %d spread violations, %d affinity violations, %d zone-less claims holding %d zone-counted pods, zone balance %.3f %s %s",
		f.pods, f.spreadViolation, f.affinityBroken, f.zonelessClaims, f.zonelessPods, f.balance, f.costMismatch, strings.Join(f.first, "; "))
}

func (f fidelity) ok() bool {
	return f.spreadViolation == 0 && f.affinityBroken == 0 && f.zonelessPods == 0 && f.costMismatch == ""
}

// termCounter counts, per domain of one key, the pods one selector picks in
// some namespaces, on the nodes a filter admits.
type termCounter struct {
	key        string
	namespaces []string // nil: all
	selector   labels.Selector
	nodeOK     func(*corev1.Node) bool
	counts     map[string]int
}

func (c *termCounter) add(p *corev1.Pod, n *corev1.Node) {
	if c.namespaces != nil && !slices.Contains(c.namespaces, p.Namespace) {
		return
	}
	v, ok := n.Labels[c.key]
	if !ok || !c.selector.Matches(labels.Set(p.Labels)) || (c.nodeOK != nil && !c.nodeOK(n)) {
		return
	}
	c.counts[v]++
}

type replayer struct {
	pr       *replay.Problem
	nodes    map[string]*corev1.Node
	placed   []podAt
	counters map[string]*termCounter
	domains  map[string]map[string]bool // per spread definition: the eligible domains
}

type podAt struct {
	pod  *corev1.Pod
	node *corev1.Node
}

// counter returns the counter for def, creating it and counting the pods
// placed so far.
func (r *replayer) counter(def string, mk func() *termCounter) *termCounter {
	if c, ok := r.counters[def]; ok {
		return c
	}
	c := mk()
	c.counts = map[string]int{}
	for _, pa := range r.placed {
		c.add(pa.pod, pa.node)
	}
	r.counters[def] = c
	return c
}

func (r *replayer) place(p *corev1.Pod, n *corev1.Node) {
	r.placed = append(r.placed, podAt{p, n})
	for _, c := range r.counters {
		c.add(p, n)
	}
}

func narrowed(ls *metav1.LabelSelector, own map[string]string, matchKeys []string) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	for _, k := range matchKeys {
		if v, ok := own[k]; ok {
			if req, err := labels.NewRequirement(k, "=", []string{v}); err == nil {
				sel = sel.Add(*req)
			}
		}
	}
	return sel
}

// checkFidelity replays a materialised plan.
func checkFidelity(pr *replay.Problem, planCost float64) fidelity {
	r := &replayer{pr: pr, nodes: map[string]*corev1.Node{}, counters: map[string]*termCounter{}, domains: map[string]map[string]bool{}}
	for _, n := range pr.Nodes {
		r.nodes[n.Name] = n
	}
	for _, p := range pr.Bound {
		if n := r.nodes[p.Spec.NodeName]; n != nil {
			r.place(p, n)
		}
	}
	f := fidelity{pods: len(pr.Bindings)}
	spreadDefs := map[string]*termCounter{}
	for _, b := range pr.Bindings {
		p, n := b.Pod, r.nodes[b.Node]
		if n == nil {
			f.problem("pod %s planned for unknown node %s", p.Name, b.Node)
			continue
		}
		affinity := nodeaffinity.GetRequiredNodeAffinity(p)
		for i := range p.Spec.TopologySpreadConstraints {
			tsc := &p.Spec.TopologySpreadConstraints[i]
			if tsc.TopologyKey == corev1.LabelHostname || tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			honor := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
			honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
			sel := narrowed(tsc.LabelSelector, p.Labels, tsc.MatchLabelKeys)
			filter := func(n *corev1.Node) bool {
				if ok, _ := affinity.Match(n); honor && !ok {
					return false
				}
				return !honorTaints || toleratesScheduling(p, n)
			}
			def := fmt.Sprintf("S|%s|%s|%s|%v|%s|%v|%v", tsc.TopologyKey, p.Namespace, sel, honor, nodeSelectorDef(p), honorTaints, p.Spec.Tolerations)
			c := r.counter(def, func() *termCounter {
				return &termCounter{key: tsc.TopologyKey, namespaces: []string{p.Namespace}, selector: sel, nodeOK: filter}
			})
			spreadDefs[def] = c
			domains, ok := r.domains[def]
			if !ok {
				domains = map[string]bool{}
				for _, m := range pr.Nodes {
					if v, ok := m.Labels[tsc.TopologyKey]; ok && filter(m) {
						domains[v] = true
					}
				}
				r.domains[def] = domains
			}
			dom, ok := n.Labels[tsc.TopologyKey]
			if !ok {
				f.spreadViolation++
				f.problem("pod %s on node %s without %s", p.Name, n.Name, tsc.TopologyKey)
				continue
			}
			least := math.MaxInt
			for d := range domains {
				least = min(least, c.counts[d])
			}
			if len(domains) == 0 || (tsc.MinDomains != nil && int32(len(domains)) < *tsc.MinDomains) {
				least = 0
			}
			self := 0
			if sel.Matches(labels.Set(p.Labels)) {
				self = 1
			}
			if skew := c.counts[dom] + self - least; skew > int(tsc.MaxSkew) {
				f.spreadViolation++
				f.problem("pod %s to %s: %s %s=%s holds %d, fewest %d, skew %d > %d", p.Name, n.Name, sel, tsc.TopologyKey, dom, c.counts[dom], least, skew, tsc.MaxSkew)
			}
		}
		if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
			for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				term := &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
				if term.TopologyKey == corev1.LabelHostname {
					continue
				}
				sel := narrowed(term.LabelSelector, p.Labels, term.MatchLabelKeys)
				namespaces := append([]string{}, term.Namespaces...)
				if term.NamespaceSelector == nil && len(namespaces) == 0 {
					namespaces = []string{p.Namespace}
				} else if term.NamespaceSelector != nil {
					namespaces = nil // approximation: any namespace
				}
				def := fmt.Sprintf("A|%s|%v|%s", term.TopologyKey, namespaces, sel)
				c := r.counter(def, func() *termCounter {
					return &termCounter{key: term.TopologyKey, namespaces: namespaces, selector: sel}
				})
				total := 0
				for _, v := range c.counts {
					total += v
				}
				dom, ok := n.Labels[term.TopologyKey]
				switch {
				case ok && c.counts[dom] > 0:
				case total == 0 && sel.Matches(labels.Set(p.Labels)):
				default:
					f.affinityBroken++
					f.problem("pod %s to %s: pod affinity %s on %s=%q not met (%d matching elsewhere)", p.Name, n.Name, sel, term.TopologyKey, dom, total)
				}
			}
		}
		r.place(p, n)
	}
	// Zone-less claims: free to launch in several zones while holding a pod
	// a zonal spread or affinity counts.
	zonal := func(p *corev1.Pod) bool {
		for _, c := range r.counters {
			if c.key == corev1.LabelTopologyZone && (c.namespaces == nil || slices.Contains(c.namespaces, p.Namespace)) && c.selector.Matches(labels.Set(p.Labels)) {
				return true
			}
		}
		return false
	}
	byNode := map[string][]*corev1.Pod{}
	for _, b := range pr.Bindings {
		byNode[b.Node] = append(byNode[b.Node], b.Pod)
	}
	cost := 0.0
	for _, c := range pr.Claims {
		cost += c.Price
		if len(c.Zones) <= 1 {
			continue
		}
		n := 0
		for _, p := range byNode[c.Node] {
			if zonal(p) {
				n++
			}
		}
		if n > 0 {
			f.zonelessClaims++
			f.zonelessPods += n
			f.problem("claim %s may launch in %v and holds %d zone-counted pods", c.Node, c.Zones, n)
		}
	}
	if math.Abs(cost-planCost) > 1e-6*max(1, planCost) {
		f.costMismatch = fmt.Sprintf("plan cost %.6f, cheapest offerings %.6f", planCost, cost)
	}
	// Balance over the zonal spread selectors, all pods placed.
	f.balance = 1
	zones := map[string]bool{}
	for _, n := range pr.Nodes {
		if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			zones[z] = true
		}
	}
	defs := make([]string, 0, len(spreadDefs))
	for d := range spreadDefs {
		defs = append(defs, d)
	}
	sort.Strings(defs)
	for _, d := range defs {
		c := spreadDefs[d]
		if c.key != corev1.LabelTopologyZone {
			continue
		}
		least, most := math.MaxInt, 0
		for z := range zones {
			least, most = min(least, c.counts[z]), max(most, c.counts[z])
		}
		if least > 0 {
			f.balance = max(f.balance, float64(most)/float64(least))
		} else if most > 0 {
			f.balance = math.Inf(1)
		}
	}
	return f
}

// toleratesScheduling reports whether the pod tolerates every NoSchedule
// and NoExecute taint of the node: the nodes a spread constraint with
// nodeTaintsPolicy Honor counts.
func toleratesScheduling(p *corev1.Pod, n *corev1.Node) bool {
	for i := range n.Spec.Taints {
		taint := &n.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), taint, false) }) {
			return false
		}
	}
	return true
}

func nodeSelectorDef(p *corev1.Pod) string {
	s := fmt.Sprint(p.Spec.NodeSelector)
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		s += a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String()
	}
	return s
}
