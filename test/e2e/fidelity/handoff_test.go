package fidelity_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// strictEnv, set to "true", also fails the test on any pod bound elsewhere
// than planned and on any NodeClaim launched for pods already planned onto
// another. Off by default while the nomination hand-off loses nominations
// (see TestPlanHandOff).
const strictEnv = "DOVETAIL_FIDELITY_STRICT"

// schedulerLag is how long after the test sees a node become schedulable
// the kube-scheduler may still act on its older view of it: a pod bound
// elsewhere within it counts as bound before its planned node was
// schedulable.
const schedulerLag = 2 * time.Second

// overriddenWhy is why a pod that held its nomination to a schedulable node
// from before the node was schedulable, and needs only room, bound
// elsewhere.
const overriddenWhy = "OVERRIDDEN: held its nomination to a node from before the node was schedulable, needs only room"

// overriddenTolerance is how many overridden pods (overriddenWhy) the test
// accepts outside strict mode: half a percent of the 1,000. On 2026-11-27
// one pod was overridden in 1 of 7 runs (a run inside the full CI suite),
// and later that day 3 and 4 pods in 2 of 9 runs of code that had passed
// CI, on a loaded machine; each failing run of a change that disturbed the
// hand-off (reverted) had 4 to 23. So the tolerance lets the first pass,
// and catches all but the mildest of the second: DOVETAIL_FIDELITY_STRICT
// still fails on any.
const overriddenTolerance = 5

// workload is one Deployment of the mix.
type workload struct {
	name        string
	replicas    int32
	cpu, memory string
	shape       func(*appsv1.Deployment)
}

// mix is karpenter-mix (docs/workloads.md §1) shaped for the EC2 catalog
// the kwok provider offers and scaled to 1,000 pods: generic pods of four
// sizes, zonal topology spread (maxSkew 1, DoNotSchedule), two groups with
// required pod affinity to themselves on the zone, and 30 pods with
// required hostname anti-affinity (a node each). A Deployment has one pod
// template, so each part's sizes come from its Deployments rather than per
// pod draws.
func mix() []workload {
	return []workload{
		{"generic-small", 200, "250m", "256Mi", nil},
		{"generic-medium", 150, "500m", "1Gi", nil},
		{"generic-large", 100, "1500m", "2Gi", nil},
		{"generic-memory", 50, "1", "4Gi", nil},
		{"spread-small", 200, "250m", "512Mi", zonalSpread},
		{"spread-large", 90, "1", "1Gi", zonalSpread},
		{"affinity-a", 90, "500m", "1Gi", zonalAffinity},
		{"affinity-b", 90, "250m", "2Gi", zonalAffinity},
		{"anti-affinity", 30, "500m", "512Mi", hostnameAntiAffinity},
	}
}

func zonalSpread(d *appsv1.Deployment) {
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
	}}
}

// zonalAffinity makes the pods share a zone: labelled my-affinity=<name>
// and requiring a pod so labelled in their zone, as karpenter-mix's part 4.
func zonalAffinity(d *appsv1.Deployment) {
	selector := map[string]string{"my-affinity": d.Name}
	d.Spec.Template.Labels = maps.Clone(d.Spec.Template.Labels)
	d.Spec.Template.Labels["my-affinity"] = d.Name
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
		}},
	}}
}

func hostnameAntiAffinity(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
		}},
	}}
}

// TestPlanHandOff is issue 15's plan fidelity check: 1,000 mixed pods are
// created at once on a cluster with no node; Dovetail plans them, launches
// the NodeClaims and, as each node registers, nominates the pods it was
// launched for to it (status.nominatedNodeName); the real kube-scheduler
// then binds them. It reports, for every pod, whether it bound to the node
// Dovetail planned it onto, and why not, and the NodeClaims against the
// plan.
//
// It fails when a pod stays pending, when a NodeClaim of the first plan is
// left empty or any NodeClaim is deleted, and when more than
// overriddenTolerance pods that need only room held their nomination to a
// node that had been schedulable for schedulerLag and still bound
// elsewhere (the kube-scheduler tries the nominated node first and keeps
// room there for nominated pods, so that would mean the plan overfilled
// the node). Pods bound elsewhere for the reasons the hand-off cannot
// prevent today are counted and logged, and fail the test only with
// DOVETAIL_FIDELITY_STRICT=true:
//   - bound before their planned node was schedulable: a pending pod that
//     fits on a node that is up binds there; a nomination to a node that
//     still has its unregistered or not-ready taint is only tried first;
//   - nomination lost: a scheduling attempt that fails (its node still
//     tainted, or full) makes the kube-scheduler's preemption clear
//     nominatedNodeName, and each such change requeues the other pending
//     pods of equal or lower priority, which clears their nominations in
//     turn, so nominations set before the node is schedulable are mostly
//     cleared before it is; Dovetail nominates again once the node is
//     schedulable for the pod, a bounded number of times, but the pod may
//     bind elsewhere in between;
//   - spread or affinity terms that did not admit the planned node at the
//     time: the kube-scheduler enforces maxSkew and pod affinity against
//     the pods bound so far, and nodes register in their own order, so a
//     zone whose nodes come up first fills ahead of the plan;
//   - never nominated: a batch of one workload gets no nominations, a
//     failed nomination write is not retried, a pod with a DoNotSchedule
//     topology spread constraint is nominated only where the scheduler's
//     spread filter admits it with the pods nominated there counted (the
//     pods of one spread group nominated together beyond that keep each
//     other off the node: 199 of 1,000 pods stayed pending so in a CI
//     run), and a pod whose node no longer has room for it is planned
//     again elsewhere.
func TestPlanHandOff(t *testing.T) {
	ctx := context.Background()
	ns := testEnv.Namespace(t)
	w := startWatch(t, ns)
	startDovetail(t)

	total := 0
	for _, wl := range mix() {
		total += int(wl.replicas)
	}
	clk := clock.RealClock{}
	start := clk.Now()
	for _, wl := range mix() {
		d := workloads.Deployment(ns, wl.name, wl.replicas, wl.cpu, wl.memory)
		if wl.shape != nil {
			wl.shape(d)
		}
		if err := testEnv.Client.Create(ctx, d); err != nil {
			t.Fatalf("creating %s: %v", wl.name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 8*time.Minute, true, func(context.Context) (bool, error) {
		seen, _, running := w.progress()
		return seen >= total && running >= total, nil
	})
	elapsed := clk.Since(start)
	seen, bound, running := w.progress()
	t.Logf("%d pods: %d seen, %d bound, %d Running after %s", total, seen, bound, running, elapsed.Round(100*time.Millisecond))
	if err != nil {
		t.Errorf("not every pod is Running after %s: %v", elapsed.Round(time.Second), err)
	}
	report(t, w, start, total)
	logDrift(t)
}

// logDrift logs the NodePool's generation and template hash and the
// NodeClaims made from another hash: the pool is never changed during the
// test, so none should drift.
func logDrift(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pool := localcluster.DefaultNodePool()
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
		t.Logf("reading the NodePool: %v", err)
		return
	}
	claims := &v1.NodeClaimList{}
	if err := testEnv.Client.List(ctx, claims); err != nil {
		t.Logf("listing NodeClaims: %v", err)
		return
	}
	hash := pool.Annotations[v1.NodePoolHashAnnotationKey]
	var other []string
	for _, nc := range claims.Items {
		if h := nc.Annotations[v1.NodePoolHashAnnotationKey]; h != hash {
			other = append(other, nc.Name+"="+h)
		}
	}
	var managers []string
	for _, f := range pool.ManagedFields {
		managers = append(managers, f.Manager+"/"+string(f.Operation)+"/"+f.Subresource)
	}
	t.Logf("NodePool generation %d, hash %s, field managers %v; NodeClaims with another hash: %v", pool.Generation, hash, managers, other)
}

// report classifies every pod by where it bound against Dovetail's plan
// and each NodeClaim against the plan, logs the counts with samples, and
// fails as TestPlanHandOff says.
//
// A pod's planned node is the last node Dovetail nominated it to; for a pod
// Dovetail never nominated, the node of the NodeClaim its last Nominated
// event named (the kwok provider names a node after its claim). Events are
// best effort (the recorder drops them when its queue is full), so a claim
// with no plan seen (no event and no nomination names it) fails the test
// only in strict mode.
func report(t *testing.T, w *watch, start time.Time, total int) {
	t.Helper()
	pods, nodes, claims, managers := w.snapshot()
	rel := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(start).Round(100 * time.Millisecond).String()
	}
	nodeOfClaim := func(claim string) string {
		for name, n := range nodes {
			if n.claim == claim {
				return name
			}
		}
		return claim
	}
	// plannedFor counts the pods planned onto each node.
	plannedFor := map[string]int{}
	plan := make([]string, len(pods))
	for i, p := range pods {
		plan[i] = p.plan
		if plan[i] == "" && len(p.claims) > 0 {
			plan[i] = nodeOfClaim(p.claims[len(p.claims)-1])
		}
		if plan[i] != "" {
			plannedFor[plan[i]]++
		}
	}

	var onPlan, elsewhere, pending, unnominated, unplannedPods, replanned, schedulerNominated, cleared int
	// Why pods bound elsewhere: Dovetail never nominated them; they bound
	// before their planned node could take pods; they had lost their
	// nomination (the kube-scheduler clears it when an attempt fails) by
	// the time the node could; or they still held it then (overridden).
	var notNominated, early, lost, late, constrainedAway, overridden int
	// Where they went: a node that existed before the test, one planned for
	// other pods, one planned for none.
	var toPreexisting, toOthers, toUnplanned int
	var samples, overrides, waiting []string
	sample := func(format string, args ...any) {
		if len(samples) < 30 {
			samples = append(samples, fmt.Sprintf(format, args...))
		}
	}
	podsOn := map[string]int{}
	for i, p := range pods {
		if p.schedulerNomination != "" {
			schedulerNominated++
		}
		if p.clears > 0 {
			cleared++
		}
		if len(p.claims) > 1 || len(p.plans) > 1 {
			replanned++
		}
		if p.node == "" {
			pending++
			if len(waiting) < 20 {
				waiting = append(waiting, fmt.Sprintf("pending %s (%s): planned onto %q, nominations %v (%d written, cleared %d times, last at %s), NodeClaims %v; the kube-scheduler: %q",
					p.name, p.app, plan[i], p.plans, p.writes, p.clears, rel(p.clearedAt), p.claims, p.unschedulable))
			}
			continue
		}
		podsOn[p.node]++
		if p.plan == "" {
			unnominated++
		}
		switch {
		case plan[i] == "":
			unplannedPods++
			continue
		case p.node == plan[i]:
			onPlan++
			continue
		}
		elsewhere++
		planned, target := nodes[plan[i]], nodes[p.node]
		var why string
		switch {
		case p.plan == "":
			notNominated++
			why = "never nominated"
		case planned.schedulable.IsZero() || p.boundAt.Before(planned.schedulable.Add(schedulerLag)):
			early++
			why = "bound before its planned node was schedulable"
		case !p.nominated:
			lost++
			why = "had lost its nomination when it bound"
		case p.planAt.After(planned.schedulable):
			late++
			why = "nominated only after its planned node was schedulable (its room may have gone)"
		case !p.constrained && p.planAt.Before(planned.schedulable):
			overridden++
			why = overriddenWhy
		default:
			constrainedAway++
			why = "held its nomination to a schedulable node its spread or affinity terms did not admit then"
		}
		where := "planned for other pods"
		switch {
		case target.preexisting:
			toPreexisting++
			where = "existed before the test"
		case plannedFor[p.node] > 0:
			toOthers++
		default:
			toUnplanned++
			where = "planned for no pod"
		}
		line := fmt.Sprintf("elsewhere %s (%s): planned onto %s (schedulable at %s), nominations %v first at %s, cleared %d times (last at %s); bound to %s at %s (%s, schedulable at %s): %s",
			p.name, p.app, plan[i], rel(planned.schedulable), p.plans, rel(p.planAt), p.clears, rel(p.clearedAt),
			p.node, rel(p.boundAt), where, rel(target.schedulable), why)
		if why == overriddenWhy {
			overrides = append(overrides, line)
		} else {
			sample("%s", line)
		}
	}

	// NodeClaims against the plan: a claim is beyond the first plan when
	// every pod planned onto it had been planned onto another claim first
	// (it was launched because pods did not bind where planned). A pod's
	// plans are the claims its Nominated events named, then those of the
	// nodes Dovetail nominated it to.
	firstFor, laterFor := map[string]int{}, map[string]int{}
	claimOfNode := func(node string) string {
		if c := nodes[node].claim; c != "" {
			return c
		}
		return node
	}
	for _, p := range pods {
		history := slices.Clone(p.claims)
		for _, n := range p.plans {
			if c := claimOfNode(n); !slices.Contains(history, c) {
				history = append(history, c)
			}
		}
		for j, c := range history {
			if j == 0 {
				firstFor[c]++
			} else {
				laterFor[c]++
			}
		}
	}
	var created, deleted, empty, unplanned, beyond []string
	for name, gone := range claims {
		created = append(created, name)
		switch node := nodeOfClaim(name); {
		case gone:
			deleted = append(deleted, name)
		case podsOn[node] == 0:
			empty = append(empty, name)
		}
		switch {
		case firstFor[name] == 0 && laterFor[name] == 0:
			unplanned = append(unplanned, name)
		case firstFor[name] == 0:
			beyond = append(beyond, name)
		}
	}
	for _, l := range [][]string{created, deleted, empty, unplanned, beyond} {
		sort.Strings(l)
	}

	t.Logf("pods: %d bound to their planned node, %d bound elsewhere, %d pending, of %d; %d bound without a plan the test could see; %d never nominated by Dovetail before binding",
		onPlan, elsewhere, pending, total, unplannedPods, unnominated)
	t.Logf("bound elsewhere: %d never nominated, %d bound before their planned node was schedulable, %d had lost their nomination (cleared by the kube-scheduler) when they bound, %d were nominated only after the node was schedulable, %d held it but their spread or affinity terms kept them off the node then, %d held it from before the node was schedulable and needed only room; onto %d nodes that existed before, %d nodes planned for other pods, %d planned for none",
		notNominated, early, lost, late, constrainedAway, overridden, toPreexisting, toOthers, toUnplanned)
	t.Logf("nominations: %d pods lost Dovetail's nomination before binding, %d were planned onto more than one NodeClaim, %d were nominated by another manager; owners of nominatedNodeName seen: %v",
		cleared, replanned, schedulerNominated, managers)
	evented := 0
	for _, p := range pods {
		if len(p.claims) > 0 {
			evented++
		}
	}
	t.Logf("NodeClaims: %d created, %d beyond the first plan %v, %d with no plan seen %v, %d empty %v, %d deleted %v; Nominated events seen for %d pods (the recorder drops events when its queue is full)",
		len(created), len(beyond), beyond, len(unplanned), unplanned, len(empty), empty, len(deleted), deleted, evented)
	for _, s := range waiting {
		t.Log(s)
	}
	for _, s := range samples {
		t.Log(s)
	}
	for _, s := range overrides {
		t.Log(s)
	}
	if len(overrides) > 0 {
		logFill(t, pods, nodes, plan)
	}

	if pending > 0 {
		t.Errorf("%d pods never bound", pending)
	}
	if overridden > overriddenTolerance || (overridden > 0 && os.Getenv(strictEnv) == "true") {
		t.Errorf("%d pods without spread or affinity terms held Dovetail's nomination from before their node was schedulable and bound elsewhere more than %s after it was: the plan overfilled the node, or the scheduler did not keep room for the nominated pods (see the node fill logged above)", overridden, schedulerLag)
	}
	// An empty claim launched beyond the first plan (for pods already
	// planned onto another claim, which then bound elsewhere) is what
	// pods binding off plan cost today: consolidation removes it, and it
	// fails only in strict mode. An empty claim of the first plan, or any
	// deleted claim (a claim marked Drifted is replaced), always fails. A
	// claim no pod's plan was seen for (its Nominated events dropped, its
	// pods never nominated to its node) cannot be told apart; it too fails
	// only in strict mode, as every claim with no plan seen does.
	var emptyPlanned []string
	for _, name := range empty {
		if firstFor[name] > 0 {
			emptyPlanned = append(emptyPlanned, name)
		}
	}
	if len(emptyPlanned)+len(deleted) > 0 {
		t.Errorf("NodeClaims wasted: %d of the first plan left empty %v, %d deleted (a claim marked Drifted is replaced: see the NodePool hash line below)", len(emptyPlanned), emptyPlanned, len(deleted))
	}
	if os.Getenv(strictEnv) == "true" {
		if n := len(empty) - len(emptyPlanned); n > 0 {
			t.Errorf("%d NodeClaims launched beyond the first plan or with no plan seen were left empty", n)
		}
		if elsewhere > 0 {
			t.Errorf("%d pods bound to a node other than the one Dovetail planned them onto", elsewhere)
		}
		if len(beyond)+len(unplanned) > 0 {
			t.Errorf("NodeClaims beyond the plan: %d launched for pods already planned onto another, %d with no plan seen", len(beyond), len(unplanned))
		}
	}
}

// logFill logs, for each node, its allocatable cpu and memory against the
// requests of the pods planned onto it and of those that bound to it.
func logFill(t *testing.T, pods []podRecord, nodes map[string]nodeRecord, plan []string) {
	t.Helper()
	type fill struct{ plannedCPU, plannedMem, boundCPU, boundMem int64 }
	fills := map[string]*fill{}
	at := func(node string) *fill {
		if fills[node] == nil {
			fills[node] = &fill{}
		}
		return fills[node]
	}
	for i, p := range pods {
		if plan[i] != "" {
			f := at(plan[i])
			f.plannedCPU += p.cpu
			f.plannedMem += p.memory
		}
		if p.node != "" {
			f := at(p.node)
			f.boundCPU += p.cpu
			f.boundMem += p.memory
		}
	}
	names := make([]string, 0, len(fills))
	for name := range fills {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f, n := fills[name], nodes[name]
		t.Logf("node %s: allocatable %dm/%dMi, planned %dm/%dMi, bound %dm/%dMi", name, n.cpu, n.memory>>20, f.plannedCPU, f.plannedMem>>20, f.boundCPU, f.boundMem>>20)
	}
}

// startDovetail creates the default KWOKNodeClass and a NodePool like the
// default one, but with room for the whole mix and consolidation off (a pod
// moved by consolidation would blur where it first bound), and runs the
// controller with its production batching until the test ends; then it
// removes what the test launched.
func startDovetail(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pool := localcluster.DefaultNodePool()
	pool.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("5000")}
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(v1.Never)
	for _, obj := range []client.Object{localcluster.DefaultNodeClass(), pool} {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", env.Describe(obj), err)
		}
	}
	opts := localcluster.OperatorOptions()
	opts.LogWriter = testlog.Writer(t)
	opts.DisableWebhook = true
	// DOVETAIL_FIDELITY_LOG_LEVEL=debug logs each nomination and plan.
	if level := os.Getenv("DOVETAIL_FIDELITY_LOG_LEVEL"); level != "" {
		opts.LogLevel = level
	}
	cluster := &localcluster.Cluster{ControlPlane: testEnv.ControlPlane, Client: testEnv.Client}
	controller, err := cluster.StartController(ctx, opts, compose.KwokOptions{})
	if err != nil {
		t.Fatalf("starting the Dovetail controller: %v", err)
	}
	t.Cleanup(func() { teardown(t, controller, pool) })
}

// teardown deletes the test's namespaces, NodePool and NodeClaims, waits
// until the controller has removed every node it launched, and stops it.
func teardown(t *testing.T, controller *localcluster.Controller, pool *v1.NodePool) {
	t.Helper()
	ctx := context.Background()
	defer func() {
		timer := time.AfterFunc(20*time.Second, func() { _ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1) })
		defer timer.Stop()
		if err := controller.Stop(); err != nil {
			t.Errorf("controller stopped with error: %v", err)
		}
		_ = testEnv.Client.Delete(ctx, localcluster.DefaultNodeClass())
	}()
	testEnv.DeleteTestNamespaces(t, 3*time.Minute)
	_ = testEnv.Client.Delete(ctx, pool)
	claims := &v1.NodeClaimList{}
	if err := testEnv.Client.List(ctx, claims); err == nil {
		for i := range claims.Items {
			_ = testEnv.Client.Delete(ctx, &claims.Items[i])
		}
	}
	env.Eventually(t, 3*time.Minute, "every NodeClaim and Dovetail node to be gone", func(ctx context.Context) (bool, error) {
		if err := testEnv.Client.List(ctx, claims); err != nil {
			return false, err
		}
		nodes := &corev1.NodeList{}
		if err := testEnv.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
}
