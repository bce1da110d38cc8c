package bench

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// runInformer adds handler to informer, starts factory, waits for its
// caches, and stops it when the benchmark ends.
func runInformer(b *testing.B, factory informers.SharedInformerFactory, informer cache.SharedIndexInformer, handler cache.ResourceEventHandler) {
	b.Helper()
	if _, err := informer.AddEventHandler(handler); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
}

// nodeStage is one step of a new node on its way to taking pods, as the
// benchmark's client sees it.
type nodeStage struct {
	name  string
	holds func(*corev1.Node) bool
}

// nodeStages are the steps a node's times are recorded for, in the order
// a node usually passes them; the last is the one pods wait for.
var nodeStages = []nodeStage{
	{"appeared", func(*corev1.Node) bool { return true }},
	{"were Ready", nodeReady},
	{"lost the not-ready taint", func(n *corev1.Node) bool { return nodeReady(n) && !hasTaint(n, corev1.TaintNodeNotReady) }},
	{"registered", func(n *corev1.Node) bool { return !hasTaint(n, v1.UnregisteredTaintKey) }},
	{"schedulable", schedulableForInflate},
}

// schedulable is nodeStages' index of the stage pods wait for.
var schedulable = len(nodeStages) - 1

// nodeClock records, client-side, when each Node first passed each of
// nodeStages.
type nodeClock struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// first holds, per stage of nodeStages, when each Node first passed it.
	first []map[string]time.Time
}

// watchNodes starts a nodeClock on every Node of the cluster.
func watchNodes(b *testing.B, cs kubernetes.Interface) *nodeClock {
	b.Helper()
	nc := &nodeClock{clock: clock.RealClock{}, first: make([]map[string]time.Time, len(nodeStages))}
	for i := range nc.first {
		nc.first[i] = map[string]time.Time{}
	}
	record := func(obj any) {
		node, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		now := nc.clock.Now()
		nc.mu.Lock()
		defer nc.mu.Unlock()
		for i, stage := range nodeStages {
			if _, ok := nc.first[i][node.Name]; !ok && stage.holds(node) {
				nc.first[i][node.Name] = now
			}
		}
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	runInformer(b, factory, factory.Core().V1().Nodes().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	})
	return nc
}

// inflateTolerations are the tolerations an inflate pod gets from the
// API server's DefaultTolerationSeconds admission: none of its own.
var inflateTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
}

// schedulableForInflate reports whether the kube-scheduler may bind an
// inflate pod to node (resources aside): Ready, not cordoned, and without
// a NoSchedule or NoExecute taint the pod does not tolerate.
func schedulableForInflate(node *corev1.Node) bool {
	if node.Spec.Unschedulable || !nodeReady(node) {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, inflateTolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true)
	return !untolerated
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
	// nodes holds, per stage of nodeStages, the times from the
	// Deployment's creation at which the nodes the pods bound to passed it
	// (zero for nodes that already had), sorted.
	nodes [][]time.Duration
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
	st := stages{nodes: make([][]time.Duration, len(nodeStages))}
	used := map[string]bool{}
	for uid, bound := range pods.bound {
		seen, running := pods.seen[uid], pods.running[uid]
		name := pods.nodeOf[uid]
		couldBind := seen
		if at, ok := nodes.first[schedulable][name]; ok && at.After(couldBind) {
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
			for i := range nodeStages {
				st.nodes[i] = append(st.nodes[i], max(nodes.first[i][name].Sub(start), 0))
			}
		}
	}
	for _, d := range append(st.nodes, st.waitForNode, st.waitForScheduler, st.waitForStart) {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	}
	return st
}

// String is the stages in one log line.
func (st stages) String() string {
	if len(st.nodes[schedulable]) == 0 {
		return "no pod bound"
	}
	p := func(d []time.Duration) string {
		return fmt.Sprintf("p50 %s, p99 %s", seconds(percentile(d, 0.5)), seconds(percentile(d, 0.99)))
	}
	spans := make([]string, len(nodeStages))
	for i, stage := range nodeStages {
		d := st.nodes[i]
		spans[i] = fmt.Sprintf("%s %s-%s (p50 %s)", stage.name, seconds(d[0]), seconds(d[len(d)-1]), seconds(percentile(d, 0.5)))
	}
	return fmt.Sprintf("%d nodes %s; pods waited for their node %s, then for the kube-scheduler %s, then for kwok to start them %s",
		len(st.nodes[schedulable]), strings.Join(spans, ", "), p(st.waitForNode), p(st.waitForScheduler), p(st.waitForStart))
}
