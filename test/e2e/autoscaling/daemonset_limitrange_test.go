package autoscaling_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestDaemonSetWithLimitRangeDefaultsLaunchesOneNode is Karpenter's
// "LimitRange Default on daemonSet pods" scenario: a namespace whose
// LimitRange gives containers default requests and limits, a high-priority
// DaemonSet whose template requests nothing, and a workload pod that
// requests nothing either. Admission gives both pods the LimitRange's
// requests; the node launched must hold both. Sizing the daemon from its
// bare template launched a node the daemon took, leaving the workload
// pending, and then a node every few seconds while emptiness removed them.
// Here exactly one NodeClaim is created, none is deleted in a window well
// after the pods run, and both pods run on that one node.
func TestDaemonSetWithLimitRangeDefaultsLaunchesOneNode(t *testing.T) {
	ctx := context.Background()
	startDovetail(t, nil)
	claims := watchNodeClaims(t)
	ns := testEnv.Namespace(t)

	priority := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-" + ns}, Value: 1_000_000}
	removeAtEnd(t, priority)
	create(t, priority)
	create(t, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"),
			},
			DefaultRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
			},
		}}},
	})
	daemonLabels := map[string]string{"app": "daemon"}
	create(t, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "daemon", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: daemonLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: daemonLabels},
				Spec: corev1.PodSpec{
					PriorityClassName:             priority.Name,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "daemon", Image: env.PauseImage}},
				},
			},
		},
	})
	workload := workloads.Deployment(ns, "workload", 1, "1", "1Gi")
	workload.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{} // the LimitRange's defaults apply
	create(t, workload)

	// Both pods run. A second launch fails at once: that is the loop.
	var workloadPod, daemonPod *corev1.Pod
	env.Eventually(t, 4*time.Minute, "the workload pod and the daemon pod on its node Running (or a second NodeClaim)", func(ctx context.Context) (bool, error) {
		if claims.createdCount() > 1 {
			return true, nil
		}
		workloadPod, daemonPod = nil, nil
		pods, err := runningPods(ctx, ns, "workload")
		if err != nil || len(pods) != 1 {
			return false, err
		}
		workloadPod = &pods[0]
		daemons, err := runningPods(ctx, ns, "daemon")
		if err != nil {
			return false, err
		}
		for i := range daemons {
			if daemons[i].Spec.NodeName == workloadPod.Spec.NodeName {
				daemonPod = &daemons[i]
			}
		}
		return daemonPod != nil, nil
	})
	if created := claims.created(); len(created) > 1 {
		t.Fatalf("NodeClaims %v created for one workload pod and one daemon, want 1", created)
	}
	for _, p := range []*corev1.Pod{workloadPod, daemonPod} {
		if got := p.Spec.Containers[0].Resources.Requests; got.Cpu().Cmp(resource.MustParse("1")) != 0 || got.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("pod %s admitted with requests %v, want the LimitRange's 1 cpu and 1Gi", p.Name, got)
		}
	}
	t.Logf("workload pod %s and daemon pod %s Running on %s", workloadPod.Name, daemonPod.Name, workloadPod.Spec.NodeName)

	// Nothing more is launched or removed over a window longer than the
	// pool's consolidateAfter (1m): a node launched for the workload pod and
	// taken by a daemon would have been launched again, and emptied ones
	// deleted, within it.
	window, cancel := context.WithTimeout(ctx, 75*time.Second)
	defer cancel()
	for window.Err() == nil {
		if created, deleted := claims.created(), claims.deleted(); len(created) != 1 || len(deleted) != 0 {
			t.Fatalf("NodeClaims created %v and deleted %v after the pods ran; want one created, none deleted", created, deleted)
		}
		select {
		case <-window.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	created, deleted := claims.created(), claims.deleted()
	if len(created) != 1 || len(deleted) != 0 {
		t.Fatalf("NodeClaims created %v and deleted %v; want one created, none deleted", created, deleted)
	}
	nc := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: created[0]}, nc); err != nil {
		t.Fatalf("reading NodeClaim %s: %v", created[0], err)
	}
	if nc.Status.NodeName != workloadPod.Spec.NodeName {
		t.Errorf("NodeClaim %s has node %q, the pods run on %q", nc.Name, nc.Status.NodeName, workloadPod.Spec.NodeName)
	}
	for _, app := range []string{"workload", "daemon"} {
		pods, err := runningPods(ctx, ns, app)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 1 || pods[0].Spec.NodeName != nc.Status.NodeName {
			t.Errorf("%s pods Running at the end: %d (want 1 on %s)", app, len(pods), nc.Status.NodeName)
		}
	}
}

// claimWatch records, from every NodeClaim event (not by sampling), the
// NodeClaims created and those deleted or being deleted since it started.
type claimWatch struct {
	mu             sync.Mutex
	createdClaims  map[string]bool
	deletedClaims  map[string]bool
	createdInOrder []string
}

// watchNodeClaims starts a claimWatch; NodeClaims that exist already when
// it starts count as created.
func watchNodeClaims(t *testing.T) *claimWatch {
	t.Helper()
	w := &claimWatch{createdClaims: map[string]bool{}, deletedClaims: map[string]bool{}}
	c, err := cache.New(testEnv.ControlPlane.RESTConfig, cache.Options{Scheme: testEnv.Scheme})
	if err != nil {
		t.Fatalf("creating a cache: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer, err := c.GetInformer(ctx, &v1.NodeClaim{})
	if err != nil {
		t.Fatalf("getting the NodeClaim informer: %v", err)
	}
	record := func(obj any) {
		nc, ok := informed[*v1.NodeClaim](obj)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.createdClaims[nc.Name] {
			w.createdClaims[nc.Name] = true
			w.createdInOrder = append(w.createdInOrder, nc.Name)
		}
		if nc.DeletionTimestamp != nil {
			w.deletedClaims[nc.Name] = true
		}
	}
	remove := func(obj any) {
		nc, ok := informed[*v1.NodeClaim](obj)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.deletedClaims[nc.Name] = true
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }, DeleteFunc: remove,
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("the NodeClaim watch did not sync")
	}
	return w
}

func (w *claimWatch) createdCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.createdInOrder)
}

// created returns the names of the NodeClaims created, in the order seen.
func (w *claimWatch) created() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.createdInOrder)
}

// deleted returns the names of the NodeClaims deleted or being deleted.
func (w *claimWatch) deleted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.deletedClaims))
	for name := range w.deletedClaims {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
