package termination_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/drain"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
)

// startTermination deletes the Node and runs the reconcile that deletes its
// NodeClaim, so that the next reconcile drains.
func (h *harness) startTermination(node *corev1.Node) {
	h.t.Helper()
	h.delete(node)
	h.reconcileNode(node)
}

// TestEvictionOrder drains non-critical pods, then daemon pods, then
// critical pods, then critical daemon pods, each group only once the one
// before is gone, and never touches mirror pods or pods tolerating the
// disrupted taint.
func TestEvictionOrder(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	for _, pod := range []*corev1.Pod{
		h.makePod("app", node.Name).obj(),
		h.makePod("app-2", node.Name).obj(),
		h.makePod("ds", node.Name).daemon().obj(),
		h.makePod("critical", node.Name).priorityClass(drain.SystemClusterCritical).obj(),
		h.makePod("critical-ds", node.Name).priorityClass(drain.SystemNodeCritical).daemon().obj(),
		h.makePod("mirror", node.Name).ownedBy("v1", "Node", node.Name).obj(),
		h.makePod("tolerant", node.Name).tolerate(corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}).obj(),
	} {
		h.create(pod)
	}

	h.startTermination(node)
	for _, step := range []struct {
		group drain.Group
		pods  []string
	}{
		{drain.NonCriticalNonDaemon, []string{"app", "app-2"}},
		{drain.NonCriticalDaemon, []string{"ds"}},
		{drain.CriticalNonDaemon, []string{"critical"}},
		{drain.CriticalDaemon, []string{"critical-ds"}},
	} {
		h.reconcileNode(node)
		h.expectTerminating(step.pods...)
		h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionUnknown, termination.ReasonDraining, "draining "+step.group.String()+" pods")
		// The group is not gone until its pods are: reconciling again
		// evicts nothing more.
		h.reconcileNode(node)
		h.expectTerminating(step.pods...)
		h.finish()
	}
	h.reconcileNode(node)
	h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionTrue, termination.ReasonDrained, "")
	h.reconcileUntilGone(node, nodeClaim)
	var left []string
	for _, pod := range h.pods() {
		left = append(left, pod.Name)
		if pod.DeletionTimestamp != nil {
			t.Errorf("pod %s was evicted", pod.Name)
		}
	}
	if want := []string{"mirror", "tolerant"}; !slices.Equal(left, want) {
		t.Errorf("pods left = %v, want %v", left, want)
	}
}

// TestPDBBlocksEvictionUntilReplacementReady drains two pods under a PDB
// with minAvailable 2: each eviction is refused (429, retried with backoff)
// until a replacement is Ready elsewhere, so availability never drops
// below 2.
func TestPDBBlocksEvictionUntilReplacementReady(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pdb := h.makePDB("web", "web", 2)
	h.create(pdb)
	a, b := h.makePod("web-a", node.Name).label("app", "web").obj(), h.makePod("web-b", node.Name).label("app", "web").obj()
	h.create(a)
	h.create(b)
	h.markReady(a, b)
	h.syncPDB(pdb)

	refused := func() float64 { return testutil.ToFloat64(h.metrics.PodEvictionRequests.WithLabelValues("429")) }
	h.startTermination(node)
	h.reconcileNode(node)
	h.eventually("both evictions to be refused", func() (bool, error) { return refused() >= 2, nil })
	h.expectTerminating()
	h.expectEvent(eviction.ReasonFailedDraining, node.Name, "disruption budget")

	for i, replacement := range []string{"web-r1", "web-r2"} {
		// A replacement becomes Ready elsewhere: the PDB allows one disruption.
		pod := h.makePod(replacement, "elsewhere").label("app", "web").obj()
		h.create(pod)
		h.markReady(pod)
		h.syncPDB(pdb)
		var evicted []string
		h.eventually("one more eviction", func() (bool, error) {
			h.clock.Step(eviction.MaxDelay)
			evicted = h.terminating()
			return len(evicted) == 1, nil
		})
		h.expectAvailable("web", 2)
		if i == 0 {
			// The other pod is still refused: the API server spent the
			// allowed disruption on the first.
			before := refused()
			h.eventually("the next eviction to be refused", func() (bool, error) {
				h.clock.Step(eviction.MaxDelay)
				return refused() > before, nil
			})
			h.expectTerminating(evicted...)
		}
		h.finish()
		h.syncPDB(pdb)
		h.reconcileNode(node)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionTrue, termination.ReasonDrained, "")
	h.reconcileUntilGone(node, nodeClaim)
}

// expectAvailable fails unless at least min pods labelled app=<app> are
// Ready and not terminating.
func (h *harness) expectAvailable(app string, minimum int) {
	h.t.Helper()
	available := 0
	for _, pod := range h.pods() {
		if pod.Labels["app"] == app && pod.DeletionTimestamp == nil && slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			available++
		}
	}
	if available < minimum {
		h.t.Errorf("%d %s pods available, want at least %d", available, app, minimum)
	}
}

// deadlineOf returns the termination deadline stamped on the NodeClaim.
func (h *harness) deadlineOf(nodeClaim *v1.NodeClaim) time.Time {
	h.t.Helper()
	h.get(nodeClaim)
	deadline, err := time.Parse(time.RFC3339, nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	if err != nil {
		h.t.Fatalf("parsing the termination timestamp: %v", err)
	}
	return deadline
}

// TestDoNotDisruptPodWaitedForUntilDeadline keeps a do-not-disrupt pod
// (waiting for it, not evicting it) until the termination deadline minus
// its grace period, then deletes it with its full grace period.
func TestDoNotDisruptPodWaitedForUntilDeadline(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").terminationGracePeriod(10 * time.Minute).obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	protected := h.makePod("protected", node.Name).annotate(v1.DoNotDisruptAnnotationKey, "true").grace(30 * time.Second).obj()
	h.create(protected)
	h.create(h.makePod("plain", node.Name).obj())

	h.delete(nodeClaim)
	h.reconcileNodeClaim(nodeClaim)
	deadline := h.deadlineOf(nodeClaim)
	h.reconcileNode(node)
	h.expectTerminating("plain")
	h.finish()

	if got := h.reconcileNode(node); got.RequeueAfter <= 0 || got.RequeueAfter > time.Minute {
		t.Errorf("reconcile while waiting for the protected pod = %+v, want a requeue within a minute", got)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionUnknown, termination.ReasonDraining, "1 of them protected by "+v1.DoNotDisruptAnnotationKey)
	h.expectEvent(termination.ReasonTerminationGracePeriodExpiring, node.Name, deadline.Format(time.RFC3339))

	h.clock.SetTime(deadline.Add(-31 * time.Second))
	if got := h.reconcileNode(node); got.RequeueAfter != time.Second {
		t.Errorf("reconcile a second before the pod's delete time = %+v, want a requeue in 1s", got)
	}
	h.expectTerminating()

	h.clock.SetTime(deadline.Add(-30 * time.Second))
	h.reconcileNode(node)
	h.expectTerminating("protected")
	h.get(protected)
	if got := protected.DeletionGracePeriodSeconds; got == nil || *got != 30 {
		t.Errorf("protected pod deleted with grace %v, want its full 30s", got)
	}
	h.expectEvent(termination.ReasonDisrupted, "protected", "granted 30 seconds of grace-period")
	h.finish()
	h.reconcileUntilGone(node, nodeClaim)
}

// TestLongGracePeriodPodsDeletedEarly deletes pods whose grace period would
// outlast the node's termination deadline at deadline - grace (at once if
// that has passed, with the time left), bypassing their PDB, and shortens
// the grace period of a pod already terminating past the deadline.
func TestLongGracePeriodPodsDeletedEarly(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").terminationGracePeriod(10 * time.Minute).obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pdb := h.makePDB("slow", "slow", 1)
	h.create(pdb)
	slow := h.makePod("slow", node.Name).label("app", "slow").grace(time.Hour).obj()
	h.create(slow)
	h.markReady(slow)
	h.syncPDB(pdb)
	medium := h.makePod("medium", node.Name).annotate(v1.DoNotDisruptAnnotationKey, "true").grace(5 * time.Minute).obj()
	h.create(medium)
	leaving := h.makePod("leaving", node.Name).grace(time.Hour).obj()
	h.create(leaving)
	h.delete(leaving, client.GracePeriodSeconds(3600))

	h.delete(nodeClaim)
	h.reconcileNodeClaim(nodeClaim)
	deadline := h.deadlineOf(nodeClaim)
	want := int64(math.Floor(deadline.Sub(h.clock.Now()).Seconds()))
	h.reconcileNode(node)
	h.expectTerminating("leaving", "slow")
	for _, pod := range []*corev1.Pod{slow, leaving} {
		h.get(pod)
		if got := pod.DeletionGracePeriodSeconds; got == nil || *got != want {
			t.Errorf("pod %s deleted with grace %v, want the %ds left before the deadline", pod.Name, got, want)
		}
		h.expectEvent(termination.ReasonDisrupted, pod.Name, "bypasses the PDB")
	}

	h.clock.SetTime(deadline.Add(-5 * time.Minute))
	h.reconcileNode(node)
	h.expectTerminating("leaving", "medium", "slow")
	h.get(medium)
	if got := medium.DeletionGracePeriodSeconds; got == nil || *got != 300 {
		t.Errorf("pod medium deleted with grace %v, want its full 300s", got)
	}
	h.finish()
	h.reconcileUntilGone(node, nodeClaim)
}

// TestPodCoveredByTwoPDBs retries the eviction of a pod that two PDBs
// select (the API server answers 500) with an event saying why, until one
// PDB goes.
func TestPodCoveredByTwoPDBs(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pod := h.makePod("multi", node.Name).label("app", "multi").obj()
	h.create(pod)
	h.markReady(pod)
	first, second := h.makePDB("first", "multi", 0), h.makePDB("second", "multi", 0)
	for _, pdb := range []*policyv1.PodDisruptionBudget{first, second} {
		h.create(pdb)
		h.syncPDB(pdb)
	}

	h.startTermination(node)
	h.reconcileNode(node)
	h.eventually("the eviction to fail", func() (bool, error) {
		return testutil.ToFloat64(h.metrics.PodEvictionRequests.WithLabelValues("500")) >= 1, nil
	})
	h.expectTerminating()
	h.expectEvent(eviction.ReasonFailedDraining, node.Name, "covered by more than one PodDisruptionBudget")

	h.delete(second)
	h.eventually("the retried eviction", func() (bool, error) {
		h.clock.Step(eviction.MaxDelay)
		return slices.Equal(h.terminating(), []string{"multi"}), nil
	})
	h.finish()
	h.reconcileUntilGone(node, nodeClaim)
}
