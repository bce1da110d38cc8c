package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// replicaSet creates a ReplicaSet (no kube-controller-manager runs here, so
// it makes no pods) and returns the controller reference its pods carry.
func replicaSet(t *testing.T, ns, name string) metav1.OwnerReference {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}},
	}
	if err := testEnv.Client.Create(context.Background(), rs); err != nil {
		t.Fatalf("creating replicaset: %v", err)
	}
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// replica is a pod of the ReplicaSet requesting cpu.
func replica(ns string, owner metav1.OwnerReference, i int, cpu string) *corev1.Pod {
	pod := dtesting.MakePod(fmt.Sprintf("%s-%d", owner.Name, i)).Namespace(ns).Req("cpu", cpu).Obj()
	pod.Labels = map[string]string{"app": owner.Name, "pod-template-hash": "h1"}
	pod.OwnerReferences = []metav1.OwnerReference{owner}
	pod.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	return pod
}

// plannedCPU is the cpu the NodeClaims of the cluster were sized for
// (each 1-cpu replica adds one cpu to its claim's requests).
func plannedCPU(t *testing.T, h *harness) int64 {
	t.Helper()
	var total int64
	for _, nc := range h.claims(t) {
		total += nc.Spec.Resources.Requests.Cpu().Value()
	}
	return total
}

// TestUntriedSiblingsAreProvisionedWithTheFirst: of a ReplicaSet's four
// pending replicas the kube-scheduler has marked one unschedulable and not
// tried the others yet. With EarlyProvisioning the pass sizes its
// NodeClaims for all four; without it (Karpenter's behaviour) for the one
// marked. A pod of another owner that the scheduler has not tried, and a
// gated sibling, wait either way.
func TestUntriedSiblingsAreProvisionedWithTheFirst(t *testing.T) {
	for _, tc := range []struct {
		early bool
		want  int64
	}{{early: true, want: 4}, {early: false, want: 1}} {
		t.Run(fmt.Sprintf("EarlyProvisioning=%v", tc.early), func(t *testing.T) {
			h := newHarnessWithOptions(t, provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
				EarlyProvisioning: tc.early}, instanceTypes()...)
			ns := testEnv.Namespace(t)
			testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("default").Obj())
			web := replicaSet(t, ns, "web")
			testEnv.CreatePendingPod(t, replica(ns, web, 0, "1"))
			for i := 1; i < 4; i++ {
				if err := testEnv.Client.Create(context.Background(), replica(ns, web, i, "1")); err != nil {
					t.Fatal(err)
				}
			}
			gated := replica(ns, web, 4, "1")
			gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			other := replica(ns, replicaSet(t, ns, "api"), 0, "1")
			for _, pod := range []*corev1.Pod{gated, other} {
				if err := testEnv.Client.Create(context.Background(), pod); err != nil {
					t.Fatal(err)
				}
			}
			h.waitForPodsMarked(t, ns, 6, 1)
			h.provision(t)
			if got := plannedCPU(t, h); got != tc.want {
				t.Errorf("NodeClaims sized for %d cpu (one per replica), want %d", got, tc.want)
			}
			// The next pass plans none of them again.
			h.provision(t)
			if got := plannedCPU(t, h); got != tc.want {
				t.Errorf("after a second pass, NodeClaims sized for %d cpu, want still %d", got, tc.want)
			}
		})
	}
}
