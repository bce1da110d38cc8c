package env

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
)

// PauseImage is the image test pods use; kwok never pulls it.
const PauseImage = "registry.k8s.io/pause:3.10"

// Eventually polls condition every 50ms until it is true, failing the test
// with what was awaited when timeout passes. Errors from condition are retried.
func Eventually(t testing.TB, timeout time.Duration, what string, condition func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := condition(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// StartManager starts a controller-runtime manager against the environment
// with Dovetail's field indexes, after register has added controllers to it,
// and stops it at the end of the test. It waits until the caches are synced.
func (e *Environment) StartManager(t testing.TB, register func(mgr manager.Manager) error) manager.Manager {
	t.Helper()
	skipNameValidation := true
	mgr, err := ctrl.NewManager(e.ControlPlane.RESTConfig, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             ctrlConfig(skipNameValidation),
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := indexes.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		cancel()
		t.Fatalf("registering indexes: %v", err)
	}
	if err := register(mgr); err != nil {
		cancel()
		t.Fatalf("registering controllers: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with error: %v", err)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("manager caches did not sync")
	}
	return mgr
}

// CreatePendingPod creates pod (giving its containers the pause image) and
// marks it the way the kube-scheduler marks a pod it cannot place.
func (e *Environment) CreatePendingPod(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod = pod.DeepCopy()
	pod.UID, pod.ResourceVersion = "", ""
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image == "" {
			pod.Spec.Containers[i].Image = PauseImage
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Image == "" {
			pod.Spec.InitContainers[i].Image = PauseImage
		}
	}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
	}}
	if err := e.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
	}
	return pod
}

// CreateReadyNodePool creates the NodePool and sets its NodeClassReady and
// Ready conditions, as the readiness controller would for a ready NodeClass.
func (e *Environment) CreateReadyNodePool(t testing.TB, np *v1.NodePool) *v1.NodePool {
	t.Helper()
	ctx := context.Background()
	np = np.DeepCopy()
	np.UID, np.ResourceVersion = "", ""
	if np.Spec.Template.Spec.ExpireAfter.String() == v1.Never && np.Spec.Template.Spec.ExpireAfter.Duration == nil {
		np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("720h")
	}
	if np.Spec.Template.Spec.Requirements == nil {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	}
	if err := e.Client.Create(ctx, np); err != nil {
		t.Fatalf("creating nodepool %s: %v", np.Name, err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), np) })
	for _, c := range []string{v1.ConditionTypeNodeClassReady, v1.ConditionTypeReady} {
		meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c})
	}
	if err := e.Client.Status().Update(ctx, np); err != nil {
		t.Fatalf("marking nodepool %s ready: %v", np.Name, err)
	}
	return np
}

// DeleteAll deletes every object of the list's kind (cluster-wide) and
// removes their finalizers, for cleanup between tests.
func (e *Environment) DeleteAll(t testing.TB, list client.ObjectList, objs func() []client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := e.Client.List(ctx, list); err != nil {
		t.Fatalf("listing %T: %v", list, err)
	}
	for _, obj := range objs() {
		if len(obj.GetFinalizers()) > 0 {
			obj.SetFinalizers(nil)
			if err := e.Client.Update(ctx, obj); client.IgnoreNotFound(err) != nil {
				t.Errorf("removing finalizers of %s: %v", obj.GetName(), err)
			}
		}
		if err := e.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %s: %v", obj.GetName(), err)
		}
	}
}

// Objects returns pointers to a list's items as client.Objects, for
// DeleteAll.
func Objects[T any, P interface {
	*T
	client.Object
}](list []T) []client.Object {
	out := make([]client.Object, len(list))
	for i := range list {
		out[i] = P(&list[i])
	}
	return out
}

// Describe formats an object reference for failure messages.
func Describe(obj client.Object) string {
	return fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))
}

// CreateWithStatus creates obj and then writes the status it was given,
// which the API server drops on create (Nodes, NodeClaims, Pods and
// PodDisruptionBudgets; other kinds are only created). Tests use it to lay
// out a cluster as controllers would have left it.
func (e *Environment) CreateWithStatus(t testing.TB, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	status := obj.DeepCopyObject().(client.Object)
	obj.SetResourceVersion("")
	obj.SetUID("")
	if err := e.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	switch s := status.(type) {
	case *corev1.Node:
		obj.(*corev1.Node).Status = s.Status
	case *v1.NodeClaim:
		obj.(*v1.NodeClaim).Status = s.Status
	case *policyv1.PodDisruptionBudget:
		obj.(*policyv1.PodDisruptionBudget).Status = s.Status
	case *corev1.Pod:
		obj.(*corev1.Pod).Status = s.Status
	default:
		return
	}
	if err := e.Client.Status().Update(ctx, obj); err != nil {
		t.Fatalf("writing the status of %T %s: %v", obj, obj.GetName(), err)
	}
}

// DeleteTestNamespaces deletes every namespace Namespace made (named
// test-…), and, when wait is positive, waits that long for their pods to be
// gone, failing the test if they are not.
func (e *Environment) DeleteTestNamespaces(t testing.TB, wait time.Duration) {
	t.Helper()
	ctx := context.Background()
	namespaces := &corev1.NamespaceList{}
	if err := e.Client.List(ctx, namespaces); err == nil {
		for i := range namespaces.Items {
			if strings.HasPrefix(namespaces.Items[i].Name, "test-") {
				_ = e.Client.Delete(ctx, &namespaces.Items[i])
			}
		}
	}
	if wait <= 0 {
		return
	}
	Eventually(t, wait, "every test pod to be gone", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := e.Client.List(ctx, pods); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Namespace, "test-") {
				return false, nil
			}
		}
		return true, nil
	})
}

// RemoveClusterScoped deletes every pod, Node, NodeClaim and NodePool,
// finalizers and all, and waits until they are gone: with no
// kube-controller-manager running, the pods of deleted namespaces would
// stay, still bound to node names a later test reuses. Integration tests
// that share one API server call it before each test.
func (e *Environment) RemoveClusterScoped(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	lists := []client.ObjectList{&corev1.PodList{}, &corev1.NodeList{}, &v1.NodeClaimList{}, &v1.NodePoolList{}}
	for _, list := range lists {
		if err := e.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if len(obj.GetFinalizers()) > 0 {
				_ = e.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			}
			return client.IgnoreNotFound(e.Client.Delete(ctx, obj, client.GracePeriodSeconds(0)))
		})
	}
	Eventually(t, 30*time.Second, "leftover pods, nodes, nodeclaims and nodepools to go", func(ctx context.Context) (bool, error) {
		for _, list := range lists {
			if err := e.Client.List(ctx, list); err != nil {
				return false, err
			}
			if meta.LenList(list) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
