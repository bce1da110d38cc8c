package chaos_test

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// watch runs an informer for obj's kind (in the given namespaces, or all)
// with handlers until the returned cancel or the test's end, and returns once
// it has listed. Informers re-list after the API server comes back, so
// nothing is missed across restarts but the moments the API server itself
// was down.
func watch(t *testing.T, cluster *localcluster.Cluster, obj client.Object, handlers toolscache.ResourceEventHandler, namespaces ...string) context.CancelFunc {
	t.Helper()
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	opts := cache.Options{Scheme: scheme}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(cluster.ControlPlane.RESTConfig, opts)
	if err != nil {
		t.Fatalf("creating the cache: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer, err := c.GetInformer(ctx, obj)
	if err != nil {
		t.Fatalf("%T informer: %v", obj, err)
	}
	if _, err := informer.AddEventHandler(handlers); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatalf("the %T cache did not sync", obj)
	}
	return cancel
}

// claimWatch counts every NodeClaim ever created.
type claimWatch struct {
	mu   sync.Mutex
	seen map[types.UID]bool
}

func watchClaims(t *testing.T, cluster *localcluster.Cluster) *claimWatch {
	t.Helper()
	w := &claimWatch{seen: map[types.UID]bool{}}
	record := func(obj any) {
		if nc, ok := obj.(*v1.NodeClaim); ok {
			w.mu.Lock()
			w.seen[nc.UID] = true
			w.mu.Unlock()
		}
	}
	watch(t, cluster, &v1.NodeClaim{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	})
	return w
}

// created is the number of NodeClaims seen so far.
func (w *claimWatch) created() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// pdbWatch follows a Deployment's ready pods and counts every moment they
// drop below the PDB's minimum.
type pdbWatch struct {
	mu      sync.Mutex
	ready   map[types.UID]bool
	min     int
	broken  int
	lowest  int
	stopped bool
	// live is set once the initial list is in: before that, a low count
	// is the list arriving, not pods going.
	live   bool
	cancel context.CancelFunc
}

func watchPDB(t *testing.T, cluster *localcluster.Cluster, d *appsv1.Deployment, minAvailable int) *pdbWatch {
	t.Helper()
	w := &pdbWatch{ready: map[types.UID]bool{}, min: minAvailable, lowest: int(*d.Spec.Replicas)}
	app := d.Spec.Selector.MatchLabels["app"]
	update := func(obj any, deleted bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				pod, _ = tomb.Obj.(*corev1.Pod)
			}
		}
		if pod == nil || pod.Labels["app"] != app {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if deleted || pod.DeletionTimestamp != nil || !podReady(pod) {
			delete(w.ready, pod.UID)
		} else {
			w.ready[pod.UID] = true
		}
		if w.stopped || !w.live {
			return
		}
		n := len(w.ready)
		if n < w.min {
			w.broken++
		}
		w.lowest = min(w.lowest, n)
	}
	w.cancel = watch(t, cluster, &corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { update(obj, false) },
		UpdateFunc: func(_, obj any) { update(obj, false) },
		DeleteFunc: func(obj any) { update(obj, true) },
	}, d.Namespace)
	w.mu.Lock()
	w.lowest, w.live = len(w.ready), true
	w.mu.Unlock()
	return w
}

// stop ends the watch and returns how many times the minimum was broken.
func (w *pdbWatch) stop() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.cancel()
	return w.broken
}
