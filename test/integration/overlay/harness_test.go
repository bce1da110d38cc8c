package overlay_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/overlay"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeoverlay"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// harness is a provisioner and the nodeoverlay controller fed by real
// informers, with the kwok provider (the EC2 catalog) decorated with the
// overlays, as the operator composes them.
type harness struct {
	provisioner *provisioning.Provisioner
	cluster     *state.Cluster
	client      client.Client
	// provider is the decorated provider; raw the kwok provider under it.
	provider  *overlay.CloudProvider
	raw       *kwok.CloudProvider
	nodeClass string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	testEnv.RemoveClusterScoped(t)
	deleteOverlays(t)
	h := &harness{nodeClass: createNodeClass(t)}
	raw, err := kwok.New(testEnv.Client, clock.RealClock{}, kwok.Options{Partition: "t-" + rand.String(8)})
	if err != nil {
		t.Fatal(err)
	}
	h.raw = raw
	cluster := state.NewCluster(clock.RealClock{}).WithAPIReader(testEnv.Client)
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(cluster) {
			if err := c.Register(context.Background(), mgr); err != nil {
				return err
			}
		}
		h.provider = overlay.Decorate(raw, mgr.GetClient(), clock.RealClock{})
		recorder := events.NewRecorder(mgr.GetEventRecorderFor("dovetail-test"), clock.RealClock{}) //nolint:staticcheck // the operator's core/v1 recorder
		h.provisioner = provisioning.NewProvisioner(clock.RealClock{}, mgr.GetClient(), cluster, h.provider, recorder, m,
			provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second})
		return nodeoverlay.NewController(clock.RealClock{}, mgr.GetClient(), raw, nil).Register(context.Background(), mgr)
	})
	h.cluster, h.client = cluster, mgr.GetClient()
	t.Cleanup(func() {
		testEnv.RemoveClusterScoped(t)
		deleteOverlays(t)
	})
	return h
}

// createNodeClass creates a Ready KWOKNodeClass and deletes it at the end.
func createNodeClass(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "kwok-" + rand.String(8)}}
	if err := testEnv.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating KWOKNodeClass: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), nc) })
	if _, err := kwok.NewNodeClassController(testEnv.Client, clock.RealClock{}).Reconcile(ctx, nc); err != nil {
		t.Fatalf("reconciling KWOKNodeClass: %v", err)
	}
	return nc.Name
}

// deleteOverlays removes every NodeOverlay.
func deleteOverlays(t *testing.T) {
	t.Helper()
	if err := testEnv.Client.DeleteAllOf(context.Background(), &v1alpha1.NodeOverlay{}); err != nil {
		t.Fatalf("deleting nodeoverlays: %v", err)
	}
	env.Eventually(t, 30*time.Second, "nodeoverlays to go", func(ctx context.Context) (bool, error) {
		list := &v1alpha1.NodeOverlayList{}
		err := testEnv.Client.List(ctx, list)
		return err == nil && len(list.Items) == 0, err
	})
}

// pool creates a Ready NodePool of the harness's class, on demand in one
// zone, allowing only the given instance types.
func (h *harness) pool(t *testing.T, types ...string) *v1.NodePool {
	t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: h.nodeClass}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types},
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
	}
	np = testEnv.CreateReadyNodePool(t, np)
	// The provisioner reads pools from the manager's cache: wait until it
	// holds this one (not an earlier test's of the same name) as Ready.
	env.Eventually(t, 30*time.Second, "the ready NodePool in the cache", func(ctx context.Context) (bool, error) {
		got := &v1.NodePool{}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return got.UID == np.UID && nodepoolutil.IsReady(got), nil
	})
	return np
}

// createOverlay creates a NodeOverlay and returns it as stored.
func createOverlay(t *testing.T, name string, spec v1alpha1.NodeOverlaySpec) *v1alpha1.NodeOverlay {
	t.Helper()
	no := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := testEnv.Client.Create(context.Background(), no); err != nil {
		t.Fatalf("creating nodeoverlay %s: %v", name, err)
	}
	return no
}

// family selects an instance family.
func family(names ...string) []v1alpha1.NodeSelectorRequirement {
	return []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: names}}
}

// price returns the price the decorated provider gives the type's
// on-demand offering in us-east-1a for the pool.
func (h *harness) price(ctx context.Context, np *v1.NodePool, name string) (float64, error) {
	its, err := h.provider.GetInstanceTypes(ctx, np)
	if err != nil {
		return 0, err
	}
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
	if i < 0 {
		return 0, nil
	}
	for _, o := range its[i].Offerings {
		if o.Zone == "us-east-1a" && o.CapacityType == v1.CapacityTypeOnDemand {
			return o.Price, nil
		}
	}
	return 0, nil
}

// provision waits for the model, runs one pass and returns the NodeClaims.
func (h *harness) provision(t *testing.T) []v1.NodeClaim {
	t.Helper()
	env.Eventually(t, 30*time.Second, "cluster state to sync", func(ctx context.Context) (bool, error) {
		return h.cluster.Synced(ctx, h.client)
	})
	if err := h.provisioner.Reconcile(context.Background()); err != nil {
		t.Fatalf("provisioning: %v", err)
	}
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// pendingPod creates a pending pod with the given requests and waits until
// the cache shows it unschedulable.
func (h *harness) pendingPod(t *testing.T, requests corev1.ResourceList) *corev1.Pod {
	t.Helper()
	ns := testEnv.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: requests, Limits: requests,
		}}}},
	}
	pod = testEnv.CreatePendingPod(t, pod)
	// The API server makes a new pod Pending at once; the provisioner takes
	// it only once the cache also shows it marked unschedulable.
	env.Eventually(t, 30*time.Second, "the unschedulable pod in the cache", func(ctx context.Context) (bool, error) {
		got := &corev1.Pod{}
		err := h.client.Get(ctx, client.ObjectKeyFromObject(pod), got)
		return err == nil && podutil.IsUnschedulable(got), client.IgnoreNotFound(err)
	})
	return pod
}

// condition returns an overlay's condition of the type, nil if absent.
func condition(ctx context.Context, name, conditionType string) (*metav1.Condition, error) {
	no := &v1alpha1.NodeOverlay{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, no); err != nil {
		return nil, err
	}
	for i := range no.Status.Conditions {
		if no.Status.Conditions[i].Type == conditionType && no.Status.Conditions[i].ObservedGeneration == no.Generation {
			return &no.Status.Conditions[i], nil
		}
	}
	return nil, nil
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q), corev1.ResourceMemory: resource.MustParse("1Gi")}
}

// launch creates the claim's instance through the decorated provider, as
// the lifecycle controller does, and returns the launched claim.
func (h *harness) launch(t *testing.T, nc *v1.NodeClaim) *v1.NodeClaim {
	t.Helper()
	created, err := h.provider.Create(context.Background(), nc)
	if err != nil {
		t.Fatalf("launching nodeclaim %s: %v", nc.Name, err)
	}
	return created
}
