package fidelity_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
)

// dovetailManager is the field manager of the controller's writes (its REST
// client's user agent): a nominatedNodeName it owns is Dovetail's plan, one
// the kube-scheduler owns is the scheduler's own (a preemption, or the
// binding cycle announcing its choice).
const dovetailManager = "dovetail"

// podRecord is what the watch saw of one pod.
type podRecord struct {
	name, app string
	// constrained: the pod has affinity or topology spread terms; a pod
	// without needs only room on a node.
	constrained bool
	// cpu (millicores) and memory (bytes) the pod requests.
	cpu, memory int64
	// plan is the last non-empty nominatedNodeName Dovetail gave the pod
	// while it waited; plans lists the distinct values it gave, in order.
	plan   string
	planAt time.Time
	plans  []string
	// nominated: the pod carried Dovetail's nomination at its last update
	// before binding; clears counts the times it lost it unbound (only the
	// kube-scheduler clears a nomination: a scheduling attempt that fails
	// and finds no preemption to make sets it to ""), clearedAt the last.
	nominated bool
	clears    int
	clearedAt time.Time
	// schedulerNomination is a nominatedNodeName owned by another manager.
	schedulerNomination string
	// claims are the NodeClaims the provisioner's Nominated events named
	// for the pod, distinct, in order.
	claims []string
	// writes counts the updates that set a nominatedNodeName of Dovetail's
	// (one per write the watch saw); unschedulable is the message of the
	// kube-scheduler's latest Unschedulable condition while the pod waited.
	writes        int
	unschedulable string
	// node is the node the pod first bound to.
	node    string
	boundAt time.Time
	running bool
	deleted bool
}

// nodeRecord is what the watch saw of one node.
type nodeRecord struct {
	// preexisting: the node existed when the watch started.
	preexisting bool
	firstSeen   time.Time
	// claim is the NodeClaim that owns the node, if any.
	claim string
	// cpu (millicores) and memory (bytes) allocatable.
	cpu, memory int64
	// schedulable is when the node was first seen without a taint that
	// keeps pods off (zero while it has one).
	schedulable time.Time
}

// watch records pods, their nominations and bindings, the provisioner's
// Nominated events, nodes and NodeClaims, from informers started before the
// workload is created.
type watch struct {
	clock clock.PassiveClock

	mu     sync.Mutex
	pods   map[types.UID]*podRecord
	nodes  map[string]*nodeRecord
	claims map[string]bool // created NodeClaims; true once deleted
	// managers are the field managers seen owning a nominatedNodeName.
	managers map[string]int
}

func startWatch(t *testing.T, ns string) *watch {
	t.Helper()
	w := &watch{
		clock: clock.RealClock{}, pods: map[types.UID]*podRecord{}, nodes: map[string]*nodeRecord{},
		claims: map[string]bool{}, managers: map[string]int{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// Nodes first, so that every node of the cluster before the test is
	// known as pre-existing.
	cluster := informers.NewSharedInformerFactory(testEnv.Clientset, 0)
	nodeInformer := cluster.Core().V1().Nodes().Informer()
	cluster.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), nodeInformer.HasSynced) {
		t.Fatal("the node watch did not sync")
	}
	for _, obj := range nodeInformer.GetStore().List() {
		if n, ok := obj.(*corev1.Node); ok {
			w.nodes[n.Name] = &nodeRecord{preexisting: true, firstSeen: w.clock.Now()}
		}
	}
	if _, err := nodeInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: w.onNode, UpdateFunc: func(_, obj any) { w.onNode(obj) },
	}); err != nil {
		t.Fatal(err)
	}

	namespaced := informers.NewSharedInformerFactoryWithOptions(testEnv.Clientset, 0, informers.WithNamespace(ns))
	podInformer := namespaced.Core().V1().Pods().Informer()
	eventInformer := namespaced.Core().V1().Events().Informer()
	for informer, handler := range map[toolscache.SharedIndexInformer]toolscache.ResourceEventHandler{
		podInformer: toolscache.ResourceEventHandlerFuncs{
			AddFunc: w.onPod, UpdateFunc: func(_, obj any) { w.onPod(obj) }, DeleteFunc: w.onPodDeleted,
		},
		eventInformer: toolscache.ResourceEventHandlerFuncs{
			AddFunc: w.onEvent, UpdateFunc: func(_, obj any) { w.onEvent(obj) },
		},
	} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	namespaced.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, eventInformer.HasSynced) {
		t.Fatal("the pod and event watches did not sync")
	}

	claimCache, err := cache.New(testEnv.ControlPlane.RESTConfig, cache.Options{Scheme: testEnv.Scheme})
	if err != nil {
		t.Fatalf("creating a cache: %v", err)
	}
	claimInformer, err := claimCache.GetInformer(ctx, &v1.NodeClaim{})
	if err != nil {
		t.Fatalf("getting the NodeClaim informer: %v", err)
	}
	if _, err := claimInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: w.onClaim, UpdateFunc: func(_, obj any) { w.onClaim(obj) },
		DeleteFunc: func(obj any) {
			if nc, ok := informed[*v1.NodeClaim](obj); ok {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.claims[nc.Name] = true
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = claimCache.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !claimCache.WaitForCacheSync(syncCtx) {
		t.Fatal("the NodeClaim watch did not sync")
	}
	return w
}

// informed returns the object of an informer notification, unwrapping the
// tombstone a delete can arrive as; false for an object of another type.
func informed[T any](obj any) (T, bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	out, ok := obj.(T)
	return out, ok
}

func (w *watch) pod(uid types.UID, name string) *podRecord {
	r := w.pods[uid]
	if r == nil {
		r = &podRecord{name: name}
		w.pods[uid] = r
	}
	return r
}

func (w *watch) onPod(obj any) {
	pod, ok := informed[*corev1.Pod](obj)
	if !ok {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.pod(pod.UID, pod.Name)
	r.app = pod.Labels["app"]
	r.constrained = pod.Spec.Affinity != nil || len(pod.Spec.TopologySpreadConstraints) > 0
	r.cpu, r.memory = 0, 0
	for _, c := range pod.Spec.Containers {
		r.cpu += c.Resources.Requests.Cpu().MilliValue()
		r.memory += c.Resources.Requests.Memory().Value()
	}
	if r.node == "" {
		if pod.Spec.NodeName == "" && pod.Status.NominatedNodeName == "" && r.nominated {
			r.nominated = false
			r.clears++
			r.clearedAt = now
		}
		if nnn := pod.Status.NominatedNodeName; nnn != "" && pod.Spec.NodeName == "" {
			manager := nominationManager(pod)
			w.managers[manager]++
			if manager == dovetailManager {
				if !r.nominated || r.plan != nnn {
					r.writes++
				}
				if r.plan != nnn {
					r.planAt = now
				}
				r.plan = nnn
				r.nominated = true
				if !slices.Contains(r.plans, nnn) {
					r.plans = append(r.plans, nnn)
				}
			} else {
				r.schedulerNomination = nnn
				r.nominated = false
			}
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				r.unschedulable = c.Message
			}
		}
		if pod.Spec.NodeName != "" {
			r.node, r.boundAt = pod.Spec.NodeName, now
		}
	}
	if pod.Status.Phase == corev1.PodRunning {
		r.running = true
	}
}

func (w *watch) onPodDeleted(obj any) {
	pod, ok := informed[*corev1.Pod](obj)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pod(pod.UID, pod.Name).deleted = true
}

// nominationManager returns the field manager that owns the pod's
// status.nominatedNodeName.
func nominationManager(pod *corev1.Pod) string {
	for _, entry := range pod.ManagedFields {
		if entry.FieldsV1 != nil && strings.Contains(entry.FieldsV1.GetRawString(), `"f:nominatedNodeName"`) {
			return entry.Manager
		}
	}
	return ""
}

func (w *watch) onEvent(obj any) {
	e, ok := informed[*corev1.Event](obj)
	if !ok || e.Reason != provisioning.NominatedReason || e.InvolvedObject.Kind != "Pod" {
		return
	}
	claim, ok := provisioning.NominatedClaim(e.Message)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.pod(e.InvolvedObject.UID, e.InvolvedObject.Name)
	if !slices.Contains(r.claims, claim) {
		r.claims = append(r.claims, claim)
	}
}

func (w *watch) onNode(obj any) {
	n, ok := informed[*corev1.Node](obj)
	if !ok {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.nodes[n.Name]
	if r == nil {
		r = &nodeRecord{firstSeen: now}
		w.nodes[n.Name] = r
	}
	r.cpu, r.memory = n.Status.Allocatable.Cpu().MilliValue(), n.Status.Allocatable.Memory().Value()
	for _, ref := range n.OwnerReferences {
		if ref.Kind == "NodeClaim" {
			r.claim = ref.Name
		}
	}
	// Test pods tolerate no taint: the node takes them once it has no
	// NoSchedule or NoExecute taint (karpenter.sh/unregistered until
	// Dovetail registers it, node.kubernetes.io/not-ready until kwok
	// reports it Ready).
	blocked := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect != corev1.TaintEffectPreferNoSchedule })
	if !blocked && r.schedulable.IsZero() {
		r.schedulable = now
	}
}

func (w *watch) onClaim(obj any) {
	nc, ok := informed[*v1.NodeClaim](obj)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.claims[nc.Name]; !seen || nc.DeletionTimestamp != nil {
		w.claims[nc.Name] = nc.DeletionTimestamp != nil
	}
}

// progress counts the pods seen, bound and Running (not deleted).
func (w *watch) progress() (seen, bound, running int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.pods {
		if r.deleted || r.app == "" {
			continue
		}
		seen++
		if r.node != "" {
			bound++
		}
		if r.running {
			running++
		}
	}
	return seen, bound, running
}

// snapshot copies what the watch recorded.
func (w *watch) snapshot() (pods []podRecord, nodes map[string]nodeRecord, claims map[string]bool, managers map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.pods {
		if r.app == "" {
			continue // only an event was seen: not a pod of the workload
		}
		c := *r
		c.plans, c.claims = slices.Clone(r.plans), slices.Clone(r.claims)
		pods = append(pods, c)
	}
	slices.SortFunc(pods, func(a, b podRecord) int { return strings.Compare(a.name, b.name) })
	nodes = map[string]nodeRecord{}
	for name, r := range w.nodes {
		nodes[name] = *r
	}
	claims = map[string]bool{}
	for name, deleted := range w.claims {
		claims[name] = deleted
	}
	managers = map[string]int{}
	for m, n := range w.managers {
		managers[m] = n
	}
	return pods, nodes, claims, managers
}
