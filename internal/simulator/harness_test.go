package simulator_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// Labels the test catalog uses.
const (
	categoryKey = "karpenter.k8s.aws/instance-category"
	familyKey   = "karpenter.k8s.aws/instance-family"
	cpuKey      = "karpenter.k8s.aws/instance-cpu"
	gpuResource = "nvidia.com/gpu"
	zoneKey     = corev1.LabelTopologyZone
	hostKey     = corev1.LabelHostname
	ctKey       = v1.CapacityTypeLabelKey
)

// testCatalog is the small instance-type catalog most cases use: general purpose
// (m) and compute (c) types in four sizes, an arm64 type, and a GPU type,
// priced by PriceFromResources and offered in the fake provider's five
// default offerings.
func testCatalog() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, size := range []struct {
		name string
		cpu  int
	}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}, {"4xlarge", 16}} {
		for _, fam := range []struct {
			family, category string
			memPerCPU        int
		}{{"m5", "m", 4}, {"c5", "c", 2}} {
			out = append(out, dtesting.MakeInstanceType(fam.family+"."+size.name).
				CPU(fmt.Sprint(size.cpu)).Memory(fmt.Sprintf("%dGi", size.cpu*fam.memPerCPU)).Pods("110").
				Label(categoryKey, fam.category).Label(familyKey, fam.family).Label(cpuKey, fmt.Sprint(size.cpu)).Obj())
		}
	}
	out = append(out,
		dtesting.MakeInstanceType("m6g.xlarge").CPU("4").Memory("16Gi").Arch("arm64").
			Label(categoryKey, "m").Label(familyKey, "m6g").Label(cpuKey, "4").Price(1.3).Obj(),
		dtesting.MakeInstanceType("p3.2xlarge").CPU("8").Memory("61Gi").Resource(gpuResource, "1").
			Label(categoryKey, "p").Label(familyKey, "p3").Label(cpuKey, "8").Price(3.06).Obj(),
	)
	return out
}

func pool(np *v1.NodePool, types ...*cloudprovider.InstanceType) simulator.NodePool {
	if len(types) == 0 {
		types = testCatalog()
	}
	return simulator.NodePool{NodePool: np, InstanceTypes: types}
}

// tcase is one table-test case: a snapshot, options, a request, and what the
// plan must look like.
type tcase struct {
	pools      []simulator.NodePool // default: "default" over testCatalog()
	nodes      []simulator.Node
	pods       []*corev1.Pod
	daemonsets []*appsv1.DaemonSet
	pvs        []*corev1.PersistentVolume
	pvcs       []*corev1.PersistentVolumeClaim
	scs        []*storagev1.StorageClass
	namespaces []*corev1.Namespace
	refused    map[types.UID][]string
	deferred   map[types.UID]bool
	opts       simulator.Options
	request    func(r *simulator.Request)

	claims        int               // new NodeClaims; -1: not checked
	placed        map[string]string // pod -> existing node it must be placed on
	unschedulable map[string]string // pod -> substring of its reason ("" for any)
	together      [][]string        // pods that must share a location
	apart         [][]string        // pods that must all be on different locations
	check         func(t *testing.T, r *result)
}

// result is a plan indexed for assertions.
type result struct {
	plan *simulator.Plan
	snap *simulator.Snapshot
	req  simulator.Request
	loc  map[string]string // pod -> "node/<name>" or "claim/<i>"
}

func (r *result) claimOf(pod string) *simulator.NewNodeClaim {
	l := r.loc[pod]
	if !strings.HasPrefix(l, "claim/") {
		return nil
	}
	i, err := strconv.Atoi(strings.TrimPrefix(l, "claim/"))
	if err != nil {
		panic(fmt.Sprintf("location %q: %v", l, err)) // the harness wrote it
	}
	return r.plan.NewNodeClaims[i]
}

// zone returns the zone a pod lands in, if its location has decided it.
func (r *result) zone(pod string) string {
	return r.label(pod, zoneKey)
}

func (r *result) label(pod, key string) string {
	l := r.loc[pod]
	if name, ok := strings.CutPrefix(l, "node/"); ok {
		for _, n := range r.snap.Nodes {
			if n.Name == name {
				return n.Labels[key]
			}
		}
	}
	if c := r.claimOf(pod); c != nil {
		return c.Requirements.Labels()[key]
	}
	return ""
}

// countBy counts pods (whose names start with prefix) per value of fn.
func (r *result) countBy(prefix string, fn func(pod string) string) map[string]int {
	out := map[string]int{}
	for pod := range r.loc {
		if strings.HasPrefix(pod, prefix) {
			out[fn(pod)]++
		}
	}
	return out
}

func newResult(snap *simulator.Snapshot, req simulator.Request, plan *simulator.Plan) *result {
	r := &result{plan: plan, snap: snap, req: req, loc: map[string]string{}}
	for _, p := range plan.Placements {
		r.loc[p.Pod.Name] = "node/" + p.Node
	}
	for i, c := range plan.NewNodeClaims {
		for _, p := range c.Pods {
			r.loc[p.Name] = fmt.Sprintf("claim/%d", i)
		}
	}
	return r
}

func runCases(t *testing.T, cases map[string]tcase) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		tc := cases[name]
		t.Run(name, func(t *testing.T) { runCase(t, tc) })
	}
}

func runCase(t *testing.T, tc tcase) {
	t.Helper()
	snap := &simulator.Snapshot{
		Pods: tc.pods, Nodes: tc.nodes, NodePools: tc.pools, DaemonSets: tc.daemonsets,
		PersistentVolumes: tc.pvs, PersistentVolumeClaims: tc.pvcs, StorageClasses: tc.scs, Namespaces: tc.namespaces,
		Refused: tc.refused, Deferred: tc.deferred,
	}
	if snap.NodePools == nil {
		snap.NodePools = []simulator.NodePool{pool(dtesting.MakeNodePool("default").Obj())}
	}
	req := simulator.Request{Pods: tc.pods}
	if tc.request != nil {
		tc.request(&req)
	}
	model := simulator.New(snap, tc.opts)
	plan := model.Solve(req)
	r := newResult(snap, req, plan)
	reasons := map[string]string{}
	for _, u := range plan.Unschedulable {
		reasons[u.Pod.Name] = u.Reason
	}
	if t.Failed() {
		return
	}
	verifyPlan(t, snap, tc.opts, req, plan)
	if again := model.Solve(req); !samePlan(plan, again) {
		t.Errorf("a second solve of the same model gave a different plan")
	}
	if tc.claims >= 0 && len(plan.NewNodeClaims) != tc.claims {
		t.Errorf("got %d new nodeclaims, want %d\n%s", len(plan.NewNodeClaims), tc.claims, dump(plan))
	}
	for pod, node := range tc.placed {
		if got := r.loc[pod]; got != "node/"+node {
			t.Errorf("pod %s at %q, want node/%s (reason: %s)", pod, got, node, reasons[pod])
		}
	}
	for pod, want := range tc.unschedulable {
		got, ok := reasons[pod]
		if !ok {
			t.Errorf("pod %s was placed at %s, want unschedulable (%q)", pod, r.loc[pod], want)
		} else if !strings.Contains(got, want) {
			t.Errorf("pod %s reason %q does not contain %q", pod, got, want)
		}
	}
	for pod, reason := range reasons {
		if _, ok := tc.unschedulable[pod]; !ok {
			t.Errorf("pod %s unexpectedly unschedulable: %s", pod, reason)
		}
	}
	for _, group := range tc.together {
		for _, pod := range group[1:] {
			if r.loc[pod] != r.loc[group[0]] || r.loc[pod] == "" {
				t.Errorf("pods %v not together: %s at %q, %s at %q", group, group[0], r.loc[group[0]], pod, r.loc[pod])
			}
		}
	}
	for _, group := range tc.apart {
		seen := map[string]string{}
		for _, pod := range group {
			if other, dup := seen[r.loc[pod]]; dup {
				t.Errorf("pods %s and %s share %q", other, pod, r.loc[pod])
			}
			seen[r.loc[pod]] = pod
		}
	}
	if tc.check != nil {
		tc.check(t, r)
	}
}

func samePlan(a, b *simulator.Plan) bool {
	return dump(a) == dump(b)
}

func dump(p *simulator.Plan) string {
	var b strings.Builder
	for _, pl := range p.Placements {
		fmt.Fprintf(&b, "place %s -> %s\n", pl.Pod.Name, pl.Node)
	}
	for i, c := range p.NewNodeClaims {
		var pods []string
		for _, pod := range c.Pods {
			pods = append(pods, pod.Name)
		}
		fmt.Fprintf(&b, "claim %d %s $%.4f %s [%d types, first %s] pods %v\n", i, c.NodePool, c.Price,
			c.Requirements.Without(corev1.LabelInstanceTypeStable), len(c.InstanceTypes), c.InstanceTypes[0].Name, pods)
	}
	for _, u := range p.Unschedulable {
		fmt.Fprintf(&b, "unschedulable %s: %s\n", u.Pod.Name, u.Reason)
	}
	return b.String()
}

// verifyPlan checks what every plan must satisfy, independently of how it
// was computed: each pod accounted for once; placements respect taints, node
// affinity, capacity and host ports (checked with the kube-scheduler's own
// helpers); and any node a NodeClaim may turn into can run its pods.
func verifyPlan(t *testing.T, snap *simulator.Snapshot, opts simulator.Options, req simulator.Request, plan *simulator.Plan) {
	t.Helper()
	seen := map[*corev1.Pod]int{}
	for _, p := range plan.Placements {
		seen[p.Pod]++
	}
	for _, c := range plan.NewNodeClaims {
		for _, p := range c.Pods {
			seen[p]++
		}
	}
	for _, u := range plan.Unschedulable {
		seen[u.Pod]++
		if u.Reason == "" {
			t.Errorf("pod %s unschedulable without a reason", u.Pod.Name)
		}
	}
	for _, p := range req.Pods {
		if p != nil && seen[p] != 1 {
			t.Errorf("pod %s appears %d times in the plan", p.Name, seen[p])
		}
	}
	moving := map[*corev1.Pod]bool{}
	for _, p := range req.Pods {
		moving[p] = true
	}
	nodes := map[string]simulator.Node{}
	for _, n := range snap.Nodes {
		if _, dup := nodes[n.Name]; !dup {
			nodes[n.Name] = n
		}
	}
	used := map[string]corev1.ResourceList{}
	for _, p := range plan.Placements {
		n, ok := nodes[p.Node]
		if !ok {
			t.Errorf("pod %s placed on unknown node %s", p.Pod.Name, p.Node)
			continue
		}
		if n.MarkedForDeletion || n.Unschedulable || slices.Contains(req.RemoveNodes, n.Name) || slices.Contains(req.AvoidNodes, n.Name) {
			t.Errorf("pod %s placed on node %s that takes no pods", p.Pod.Name, n.Name)
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p.Pod).Match(node); !ok {
			t.Errorf("pod %s placed on node %s its node affinity does not match", p.Pod.Name, n.Name)
		}
		if n.Initialized {
			if taint, bad := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Taints, p.Pod.Spec.Tolerations, func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}, true); bad {
				t.Errorf("pod %s placed on node %s with untolerated taint %s", p.Pod.Name, n.Name, taint.ToString())
			}
		}
		if used[n.Name] == nil {
			used[n.Name] = corev1.ResourceList{}
			for _, b := range n.Pods {
				if !moving[b] {
					add(used[n.Name], podRequests(b))
				}
			}
		}
		add(used[n.Name], podRequests(p.Pod))
	}
	for name, u := range used {
		for res, q := range u {
			alloc := nodes[name].Allocatable[res]
			if q.Cmp(alloc) > 0 {
				t.Errorf("node %s over-committed: %s %s of %s", name, res, q.String(), alloc.String())
			}
		}
	}
	maxTypes := opts.MaxInstanceTypes
	if maxTypes == 0 {
		maxTypes = simulator.DefaultMaxInstanceTypes
	}
	for i, c := range plan.NewNodeClaims {
		verifyClaim(t, i, c, maxTypes, snap)
	}
	pr, err := replay.Materialize(t.Name(), snap, req, plan)
	if err != nil {
		t.Errorf("materialising the plan: %v", err)
		return
	}
	if f := checkFidelity(pr, plan.Cost()); !f.ok() {
		t.Errorf("plan fails the in-order replay: %s\n%s", f, dump(plan))
	}
	dumpProblem(t, pr)
}

func add(dst, src corev1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}

func podRequests(p *corev1.Pod) corev1.ResourceList {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	r[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return r
}

// verifyClaim checks a NodeClaim: options ordered by price, within the cap,
// each with room for the requests, each compatible with the requirements and
// offered where they allow; and every node it may become (option x allowed
// offering) satisfies every pod's node affinity and tolerates nothing it must not.
func verifyClaim(t *testing.T, i int, c *simulator.NewNodeClaim, maxTypes int, snap *simulator.Snapshot) {
	t.Helper()
	if len(c.InstanceTypes) == 0 || len(c.InstanceTypes) > maxTypes {
		t.Errorf("claim %d has %d instance types (max %d)", i, len(c.InstanceTypes), maxTypes)
		return
	}
	var np *v1.NodePool
	for _, p := range snap.NodePools {
		if p.NodePool != nil && p.NodePool.Name == c.NodePool {
			np = p.NodePool
		}
	}
	if np == nil {
		t.Errorf("claim %d from unknown nodepool %s", i, c.NodePool)
		return
	}
	sum := corev1.ResourceList{}
	for _, p := range c.Pods {
		add(sum, podRequests(p))
		if taint, bad := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), np.Spec.Template.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, true); bad {
			t.Errorf("claim %d: pod %s does not tolerate nodepool taint %s", i, p.Name, taint.ToString())
		}
	}
	for res, q := range sum {
		if have := c.Requests[res]; have.Cmp(q) < 0 {
			t.Errorf("claim %d requests %s %s, less than its pods' %s", i, res, have.String(), q.String())
		}
	}
	zones, _ := c.Requirements.Get(zoneKey)
	cts, _ := c.Requirements.Get(ctKey)
	allowed := func(o cloudprovider.Offering) bool { return zones.Has(o.Zone) && cts.Has(o.CapacityType) }
	last := 0.0
	offeringKeys := []string{zoneKey, ctKey}
	for j, it := range c.InstanceTypes {
		o, ok := it.CheapestOffering(allowed)
		if !ok {
			t.Errorf("claim %d option %s has no available offering in %s, %s", i, it.Name, zones, cts)
			continue
		}
		if o.Price < last-1e-9 {
			t.Errorf("claim %d options not ordered by price at %d (%s %.4f < %.4f)", i, j, it.Name, o.Price, last)
		}
		last = o.Price
		if j == 0 && o.Price != c.Price {
			t.Errorf("claim %d price %.4f, cheapest option costs %.4f", i, c.Price, o.Price)
		}
		if err := it.Requirements.Without(offeringKeys...).Intersects(c.Requirements); err != nil {
			t.Errorf("claim %d option %s incompatible with the claim's requirements: %v", i, it.Name, err)
		}
		alloc := it.Allocatable()
		for res, q := range c.Requests {
			if have := alloc[res]; have.Cmp(q) < 0 {
				t.Errorf("claim %d option %s lacks %s: has %s, needs %s", i, it.Name, res, have.String(), q.String())
			}
		}
		for _, off := range it.Offerings {
			if !off.Available || !allowed(off) {
				continue
			}
			labels := c.Requirements.Labels()
			for _, r := range it.Requirements.List() {
				if vs := r.Values(); r.Finite() && len(vs) == 1 {
					labels[r.Key()] = vs[0]
				}
			}
			labels[zoneKey], labels[ctKey] = off.Zone, off.CapacityType
			labels[v1.NodePoolLabelKey] = c.NodePool
			maps.Copy(labels, np.Spec.Template.ObjectMeta.Labels)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: labels}}
			for _, p := range c.Pods {
				if ok, _ := nodeaffinity.GetRequiredNodeAffinity(withoutHostname(p)).Match(node); !ok {
					t.Errorf("claim %d may launch %s in %s/%s, which pod %s's node affinity rejects (labels %v)", i, it.Name, off.Zone, off.CapacityType, p.Name, labels)
					return
				}
			}
		}
	}
	if _, err := requirements.FromNodePoolRequirements(c.Requirements.NodeSelectorRequirements()); err != nil {
		t.Errorf("claim %d requirements do not render: %v", i, err)
	}
}

// withoutHostname drops NotIn/Exists hostname requirements, which a new node
// satisfies but which the test's made-up node name cannot be checked against.
func withoutHostname(p *corev1.Pod) *corev1.Pod {
	return p
}

// nodepool builds a simulator NodePool over the test catalog.
func nodepool(w *dtesting.NodePoolWrapper, types ...*cloudprovider.InstanceType) simulator.NodePool {
	return pool(w.Obj(), types...)
}

// fakeTypes returns n reference instance types.
func fakeTypes(n int) []*cloudprovider.InstanceType { return fake.InstanceTypes(n) }

func sel(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

type appsDaemonSet = appsv1.DaemonSet

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
