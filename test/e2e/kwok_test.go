package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// startKwokControllers runs the kwok provider's registration and NodeClass
// controllers in a manager until the test ends.
func startKwokControllers(t *testing.T, clk clock.Clock, provider *kwok.CloudProvider) {
	t.Helper()
	mgr, err := manager.New(testEnv.ControlPlane.RESTConfig, manager.Options{
		Scheme: testEnv.Scheme,
		// Not testr: the manager still logs for a moment after the test ends.
		Logger:  funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Other tests of this binary may register controllers of the same name.
		Controller: operator.ControllerConfig(true),
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range []interface {
		Register(context.Context, manager.Manager) error
	}{kwok.NewRegistrationController(mgr.GetClient(), clk, provider), kwok.NewNodeClassController(mgr.GetClient(), clk)} {
		if err := c.Register(ctx, mgr); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	})
}

// nodeReady returns the status of the Node's Ready condition, "" if none.
func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestKwokProviderNodeBecomesReadyAndRunsPods launches a node through the
// kwok provider with a registration delay, with its controllers running in a
// manager: the Node appears once the delay has passed, kwok makes it Ready,
// and once registered (the core's part, played by the test) it runs a pod.
func TestKwokProviderNodeBecomesReadyAndRunsPods(t *testing.T) {
	ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1}))
	clk := clock.RealClock{}
	provider, err := kwok.New(testEnv.Client, clk, kwok.Options{Partition: "e2e-" + rand.String(6)})
	if err != nil {
		t.Fatal(err)
	}
	startKwokControllers(t, clk, provider)
	const delay = 3 * time.Second

	// 1. A KWOKNodeClass with a registration delay becomes Ready.
	nodeClass := &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + rand.String(6)},
		Spec:       kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: &metav1.Duration{Duration: delay}},
	}
	if err := testEnv.Client.Create(ctx, nodeClass); err != nil {
		t.Fatalf("creating KWOKNodeClass: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, nodeClass) })
	waitFor(t, "KWOKNodeClass Ready", func(ctx context.Context) (bool, error) {
		got := &kwokv1alpha1.KWOKNodeClass{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), got); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, kwokv1alpha1.ConditionTypeReady), nil
	})

	// 2. Launch, storing the claim and the launch result as the core does.
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + rand.String(8), Labels: map[string]string{v1.NodePoolLabelKey: "e2e"}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
					{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: nodeClass.Name},
			},
		},
	}
	if err := testEnv.Client.Create(ctx, claim); err != nil {
		t.Fatalf("creating nodeclaim: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, claim) })
	created, err := provider.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	registerAfter, err := strconv.ParseInt(created.Labels[kwok.RegisterAfterLabelKey], 10, 64)
	if err != nil {
		t.Fatalf("reading the registration time: %v", err)
	}
	patch := client.MergeFrom(claim.DeepCopy())
	claim.Labels = created.Labels
	if err := testEnv.Client.Patch(ctx, claim, patch); err != nil {
		t.Fatalf("storing the launch labels: %v", err)
	}
	patch = client.MergeFrom(claim.DeepCopy())
	claim.Status.ProviderID, claim.Status.Capacity, claim.Status.Allocatable = created.Status.ProviderID, created.Status.Capacity, created.Status.Allocatable
	if err := testEnv.Client.Status().Patch(ctx, claim, patch); err != nil {
		t.Fatalf("storing the launch status: %v", err)
	}
	t.Cleanup(func() {
		if err := provider.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Delete = %v, want NodeClaimNotFoundError", err)
		}
	})

	// 3. The Node appears, not before the registration time, and kwok
	// makes it Ready.
	node := &corev1.Node{}
	waitFor(t, "node Ready", func(ctx context.Context) (bool, error) {
		err := testEnv.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, node)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if now := clk.Now(); now.Before(time.Unix(0, registerAfter)) {
			return false, fmt.Errorf("node exists at %s, before its registration time %s", now, time.Unix(0, registerAfter))
		}
		return nodeReady(node) == corev1.ConditionTrue, nil
	})

	// 4. Register it as the core would: drop the unregistered taint.
	nodePatch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	var taints []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if taint.Key != v1.UnregisteredTaintKey {
			taints = append(taints, taint)
		}
	}
	node.Spec.Taints = taints
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	if err := testEnv.Client.Patch(ctx, node, nodePatch); err != nil {
		t.Fatalf("registering node: %v", err)
	}

	// 5. A pod that needs this node runs on it.
	ns := testEnv.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "on-kwok-node", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node.Name},
			Containers: []corev1.Container{{
				Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
		},
	}
	if err := testEnv.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	waitFor(t, "pod Running on the node", func(ctx context.Context) (bool, error) {
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return pod.Spec.NodeName == node.Name && pod.Status.Phase == corev1.PodRunning, nil
	})
}
