package autoscaling_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// heldScheduler names a scheduler nobody runs: the kube-scheduler leaves
// pods naming it alone, so the test decides when they are marked
// unschedulable and when they bind, as a scheduler slowed down to a halt.
const heldScheduler = "held-back-scheduler"

// TestNoPodPlannedTwiceWhileBindingIsHeld is the "100 pods with hostname
// anti-affinity" scenario with binding held back: the pods are reported
// unschedulable, Dovetail launches a node for each, and then nothing binds
// them while the nodes launch, register and initialize and many
// provisioning passes run (longer than the pool's consolidateAfter, so
// emptiness consolidation gets its chance too). Pods planned onto a node
// must stay counted there until they bind: exactly 100 NodeClaims are ever
// created and none is deleted, and once binding resumes every pod runs on
// one of them. Binding is held either by a scheduler that does not run (the
// test marks the pods unschedulable and binds them itself), or by the real
// kube-scheduler, paused (SIGSTOP) once it has found no node for any pod
// and resumed afterwards.
func TestNoPodPlannedTwiceWhileBindingIsHeld(t *testing.T) {
	cases := map[string]struct {
		registrationDelay time.Duration
		pauseScheduler    bool
	}{
		"kube-scheduler paused":                      {pauseScheduler: true},
		"binding held by the test, registration 30s": {registrationDelay: 30 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { testHeldBinding(t, tc.registrationDelay, tc.pauseScheduler) })
	}
}

func testHeldBinding(t *testing.T, registrationDelay time.Duration, pauseScheduler bool) {
	const replicas = 100
	ctx := context.Background()
	startDovetail(t, nil)
	if registrationDelay > 0 {
		class := localcluster.DefaultNodeClass()
		patch := fmt.Sprintf(`{"spec":{"nodeRegistrationDelay":%q}}`, registrationDelay.String())
		if err := testEnv.Client.Patch(ctx, class, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatalf("setting the registration delay: %v", err)
		}
	}
	claims := watchNodeClaims(t)
	ns := testEnv.Namespace(t)
	d := oneNodeEach(workloads.Deployment(ns, "held", replicas, "100m", "128Mi"))
	if !pauseScheduler {
		d.Spec.Template.Spec.SchedulerName = heldScheduler
	}
	create(t, d)

	// 1. The scheduler reports each pod unschedulable: the test, or the
	// kube-scheduler, which is then paused.
	env.Eventually(t, 2*time.Minute, fmt.Sprintf("%d pods reported unschedulable", replicas), func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := testEnv.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		marked := 0
		for i := range pods.Items {
			pod := &pods.Items[i]
			if meta.IsStatusConditionFalse(podConditions(pod), string(corev1.PodScheduled)) || pod.Spec.NodeName != "" {
				marked++
				continue
			}
			if pauseScheduler {
				continue
			}
			if err := markUnschedulable(ctx, pod); err != nil {
				return false, err
			}
		}
		return marked == replicas, nil
	})
	resume := func() {}
	if pauseScheduler {
		resume = pause(t, controlplane.BinaryKubeScheduler)
		t.Cleanup(resume)
	}

	// 2. Dovetail launches a node per pod, and they all initialize while
	// the pods stay unbound.
	env.Eventually(t, 5*time.Minute, fmt.Sprintf("%d NodeClaims Initialized", replicas), func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := testEnv.Client.List(ctx, list); err != nil {
			return false, err
		}
		initialized := 0
		for i := range list.Items {
			if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, v1.ConditionTypeInitialized) {
				initialized++
			}
		}
		return initialized >= replicas, nil
	})
	t.Logf("%d NodeClaims created by the time %d initialized", claims.createdCount(), replicas)

	// 3. Binding stays held for longer than consolidateAfter (1m) plus
	// several provisioning passes (at least one every 10 s). The watch
	// records every NodeClaim event meanwhile.
	window, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	<-window.Done()
	t.Logf("%d NodeClaims created and %d deleted while binding was held", claims.createdCount(), len(claims.deleted()))
	expectClaims(t, claims, replicas, "after binding was held")

	// 4. Binding resumes: each pod on a node of its own.
	if pauseScheduler {
		resume()
	} else {
		bindOnePerNode(t, ns)
	}
	pods := waitRunning(t, ns, "held", replicas, 3*time.Minute)
	if nodes := nodesOf(t, pods); len(nodes) != replicas {
		t.Errorf("%d pods run on %d nodes, want one each", replicas, len(nodes))
	}
	expectClaims(t, claims, replicas, "after the pods bound")
	t.Logf("%d pods, %d NodeClaims created, %d deleted", replicas, claims.createdCount(), len(claims.deleted()))
}

// pause stops a control-plane process (SIGSTOP) and returns the function
// that resumes it (SIGCONT), which may be called more than once.
func pause(t *testing.T, binary string) func() {
	t.Helper()
	pid, ok := testEnv.ControlPlane.PIDs()[binary]
	if !ok {
		t.Fatalf("no %s process in the control plane", binary)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pausing %s (pid %d): %v", binary, pid, err)
	}
	t.Logf("%s (pid %d) paused", binary, pid)
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("resuming %s (pid %d): %v", binary, pid, err)
			}
			t.Logf("%s (pid %d) resumed", binary, pid)
		})
	}
}

// expectClaims fails the test unless exactly want NodeClaims were created
// and none was deleted.
func expectClaims(t *testing.T, claims *claimWatch, want int, when string) {
	t.Helper()
	if created, deleted := claims.createdCount(), claims.deleted(); created != want || len(deleted) != 0 {
		t.Fatalf("%s: %d NodeClaims created and %d deleted %v; want %d created, none deleted", when, created, len(deleted), deleted, want)
	}
}

// podConditions returns the pod's conditions as metav1 conditions, enough
// for the meta helpers to read type and status.
func podConditions(pod *corev1.Pod) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(pod.Status.Conditions))
	for _, c := range pod.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status)})
	}
	return out
}

// markUnschedulable sets PodScheduled=False, reason Unschedulable, as the
// kube-scheduler does for a pod that fits on no node.
func markUnschedulable(ctx context.Context, pod *corev1.Pod) error {
	stored := pod.DeepCopy()
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available (binding held back by the test)", LastTransitionTime: metav1.Now(),
	})
	if err := testEnv.Client.Status().Patch(ctx, pod, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("marking pod %s unschedulable: %w", pod.Name, err)
	}
	return nil
}

// bindOnePerNode binds every pending pod of the namespace to a Dovetail
// node of its own through the Binding API, as the scheduler would.
func bindOnePerNode(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	nodes := &corev1.NodeList{}
	if err := testEnv.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	pods := &corev1.PodList{}
	if err := testEnv.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	if len(pods.Items) > len(names) {
		t.Fatalf("%d pods to bind to %d nodes", len(pods.Items), len(names))
	}
	for i, pod := range pods.Items {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns},
			Target:     corev1.ObjectReference{Kind: "Node", Name: names[i]},
		}
		if err := testEnv.Clientset.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding pod %s to %s: %v", pod.Name, names[i], err)
		}
	}
}
