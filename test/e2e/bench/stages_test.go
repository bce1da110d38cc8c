package bench

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// nodeClock records, client-side, when each Node was first seen
// schedulable for the benchmark's pods: Ready, not cordoned, and without a
// NoSchedule or NoExecute taint they do not tolerate (they tolerate only
// the not-ready and unreachable NoExecute taints, by default).
type nodeClock struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// seen, ready, untainted, registered and schedulable are when each
	// Node was first seen, first seen Ready, first seen without the
	// kube-controller-manager's not-ready taint, first seen without
	// Dovetail's unregistered taint, and first seen schedulable.
	seen, ready, untainted, registered, schedulable map[string]time.Time
}

// watchNodes starts a nodeClock on every Node of the cluster.
func watchNodes(b *testing.B, cs kubernetes.Interface) *nodeClock {
	b.Helper()
	nc := &nodeClock{clock: clock.RealClock{}, seen: map[string]time.Time{}, ready: map[string]time.Time{},
		untainted: map[string]time.Time{}, registered: map[string]time.Time{}, schedulable: map[string]time.Time{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	record := func(obj any) {
		node, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		now := nc.clock.Now()
		nc.mu.Lock()
		defer nc.mu.Unlock()
		first := func(m map[string]time.Time, holds bool) {
			if _, ok := m[node.Name]; !ok && holds {
				m[node.Name] = now
			}
		}
		first(nc.seen, true)
		first(nc.ready, nodeReady(node))
		first(nc.untainted, nodeReady(node) && !hasTaint(node, corev1.TaintNodeNotReady))
		first(nc.registered, !hasTaint(node, v1.UnregisteredTaintKey))
		first(nc.schedulable, schedulableForInflate(node))
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return nc
}

// schedulableForInflate reports whether the kube-scheduler may bind an
// inflate pod to node (resources aside).
func schedulableForInflate(node *corev1.Node) bool {
	if node.Spec.Unschedulable || !nodeReady(node) {
		return false
	}
	for _, taint := range node.Spec.Taints {
		switch {
		case taint.Effect == corev1.TaintEffectNoSchedule:
			return false
		case taint.Effect == corev1.TaintEffectNoExecute && taint.Key != corev1.TaintNodeNotReady && taint.Key != corev1.TaintNodeUnreachable:
			return false
		}
	}
	return true
}

// hasTaint reports whether node has a taint of that key.
func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// nodeReady reports whether node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// stages splits the pods' pending time at the moment each pod could first
// be bound: the later of its creation and its node becoming schedulable.
// Before it, the pod waits for a node (provisioning, launch, registration);
// after it, for the kube-scheduler (its queue, the scheduling cycle and
// the binding) and then kwok.
type stages struct {
	// nodesSeen, nodesReady, nodesUntainted, nodesRegistered and
	// nodesSchedulable are the times, from the Deployment's creation, at
	// which the nodes the pods bound to appeared, became Ready, lost the
	// not-ready taint, lost the unregistered taint and became schedulable
	// (zero for nodes that already had), each sorted.
	nodesSeen, nodesReady, nodesUntainted, nodesRegistered, nodesSchedulable []time.Duration
	// waitForNode, waitForScheduler and waitForStart are, per pod, the time
	// from creation until its node was schedulable, from then until it was
	// bound, and from binding until Running, each sorted.
	waitForNode, waitForScheduler, waitForStart []time.Duration
}

// stagesOf computes a run's stages from its pods and the cluster's nodes.
func stagesOf(start time.Time, pods *podClock, nodes *nodeClock) stages {
	pods.mu.Lock()
	defer pods.mu.Unlock()
	nodes.mu.Lock()
	defer nodes.mu.Unlock()
	var st stages
	used := map[string]bool{}
	for uid, bound := range pods.bound {
		seen, running := pods.seen[uid], pods.running[uid]
		name := pods.nodeOf[uid]
		couldBind := seen
		if at, ok := nodes.schedulable[name]; ok && at.After(couldBind) {
			couldBind = at
		}
		if bound.Before(couldBind) {
			// The watches deliver independently: a binding seen before
			// its node's last taint removal counts as immediate.
			couldBind = bound
		}
		st.waitForNode = append(st.waitForNode, couldBind.Sub(seen))
		st.waitForScheduler = append(st.waitForScheduler, bound.Sub(couldBind))
		if !running.IsZero() {
			st.waitForStart = append(st.waitForStart, running.Sub(bound))
		}
		if !used[name] {
			used[name] = true
			since := func(m map[string]time.Time) time.Duration { return max(m[name].Sub(start), 0) }
			st.nodesSeen = append(st.nodesSeen, since(nodes.seen))
			st.nodesReady = append(st.nodesReady, since(nodes.ready))
			st.nodesUntainted = append(st.nodesUntainted, since(nodes.untainted))
			st.nodesRegistered = append(st.nodesRegistered, since(nodes.registered))
			st.nodesSchedulable = append(st.nodesSchedulable, since(nodes.schedulable))
		}
	}
	for _, d := range [][]time.Duration{st.nodesSeen, st.nodesReady, st.nodesUntainted, st.nodesRegistered, st.nodesSchedulable, st.waitForNode, st.waitForScheduler, st.waitForStart} {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	}
	return st
}

// String is the stages in one log line.
func (st stages) String() string {
	if len(st.nodesSchedulable) == 0 {
		return "no pod bound"
	}
	p := func(d []time.Duration) string {
		return fmt.Sprintf("p50 %s, p99 %s", seconds(percentile(d, 0.5)), seconds(percentile(d, 0.99)))
	}
	span := func(d []time.Duration) string {
		return fmt.Sprintf("%s-%s (p50 %s)", seconds(d[0]), seconds(d[len(d)-1]), seconds(percentile(d, 0.5)))
	}
	return fmt.Sprintf("%d nodes appeared %s, were Ready %s, lost the not-ready taint %s, registered %s, schedulable %s; pods waited for their node %s, then for the kube-scheduler %s, then for kwok to start them %s",
		len(st.nodesSchedulable), span(st.nodesSeen), span(st.nodesReady), span(st.nodesUntainted), span(st.nodesRegistered), span(st.nodesSchedulable),
		p(st.waitForNode), p(st.waitForScheduler), p(st.waitForStart))
}
