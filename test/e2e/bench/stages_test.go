package bench

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// nodeClock records, client-side, when each Node was first seen
// schedulable for the benchmark's pods: Ready, not cordoned, and without a
// NoSchedule or NoExecute taint they do not tolerate (they tolerate only
// the not-ready and unreachable NoExecute taints, by default).
type nodeClock struct {
	clock       clock.PassiveClock
	mu          sync.Mutex
	schedulable map[string]time.Time
}

// watchNodes starts a nodeClock on every Node of the cluster.
func watchNodes(b *testing.B, cs kubernetes.Interface) *nodeClock {
	b.Helper()
	nc := &nodeClock{clock: clock.RealClock{}, schedulable: map[string]time.Time{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	record := func(obj any) {
		node, ok := obj.(*corev1.Node)
		if !ok || !schedulableForInflate(node) {
			return
		}
		now := nc.clock.Now()
		nc.mu.Lock()
		defer nc.mu.Unlock()
		if _, ok := nc.schedulable[node.Name]; !ok {
			nc.schedulable[node.Name] = now
		}
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
	if node.Spec.Unschedulable {
		return false
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if !ready {
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

// stages splits the pods' pending time at the moment each pod could first
// be bound: the later of its creation and its node becoming schedulable.
// Before it, the pod waits for a node (provisioning, launch, registration);
// after it, for the kube-scheduler (its queue and backoff) and then kwok.
type stages struct {
	// nodesSchedulable are the times, from the Deployment's creation, at
	// which the nodes the pods bound to became schedulable (zero for nodes
	// that already were), sorted.
	nodesSchedulable []time.Duration
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
			at := nodes.schedulable[name].Sub(start)
			st.nodesSchedulable = append(st.nodesSchedulable, max(at, 0))
		}
	}
	for _, d := range [][]time.Duration{st.nodesSchedulable, st.waitForNode, st.waitForScheduler, st.waitForStart} {
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
	return fmt.Sprintf("%d nodes schedulable between %s and %s (p50 %s); pods waited for their node %s, then for the kube-scheduler %s, then for kwok to start them %s",
		len(st.nodesSchedulable), seconds(st.nodesSchedulable[0]), seconds(st.nodesSchedulable[len(st.nodesSchedulable)-1]),
		seconds(percentile(st.nodesSchedulable, 0.5)), p(st.waitForNode), p(st.waitForScheduler), p(st.waitForStart))
}
