package provisioning_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// replicaSet creates a ReplicaSet (no kube-controller-manager runs here, so
// it makes no pods) and returns the controller reference its pods carry.
func replicaSet(t *testing.T, ns, name string) metav1.OwnerReference {
	t.Helper()
	return replicaSetOf(t, ns, name, 0)
}

// replicaSetOf is replicaSet with spec.replicas set (still no pods made).
func replicaSetOf(t *testing.T, ns, name string, replicas int32) metav1.OwnerReference {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
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

// TestReplicasNotCreatedYetAreProvisionedWithTheFirst: a ReplicaSet of 8
// has made 2 pods, and the kube-scheduler has marked one unschedulable.
// With EarlyProvisioning the pass sizes its NodeClaims for all 8 replicas;
// the 6 made later go onto the room those claims have left, launching
// nothing more. Without the gate the claims are sized for the one marked.
func TestReplicasNotCreatedYetAreProvisionedWithTheFirst(t *testing.T) {
	for _, tc := range []struct {
		early       bool
		first, then int64
	}{{early: true, first: 8, then: 8}, {early: false, first: 1, then: 8}} {
		t.Run(fmt.Sprintf("EarlyProvisioning=%v", tc.early), func(t *testing.T) {
			h := newHarnessWithOptions(t, provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
				EarlyProvisioning: tc.early}, instanceTypes()...)
			ns := testEnv.Namespace(t)
			testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("default").Obj())
			web := replicaSetOf(t, ns, "web", 8)
			testEnv.CreatePendingPod(t, replica(ns, web, 0, "1"))
			if err := testEnv.Client.Create(context.Background(), replica(ns, web, 1, "1")); err != nil {
				t.Fatal(err)
			}
			h.waitForPodsMarked(t, ns, 2, 1)
			h.provision(t)
			if got := plannedCPU(t, h); got != tc.first {
				t.Errorf("NodeClaims sized for %d cpu (one per replica), want %d", got, tc.first)
			}
			if tc.early {
				expectStandInsUnrecorded(t, h, ns)
			}
			// The ReplicaSet makes its other replicas; the scheduler marks
			// them and the pod it had not tried.
			for i := 2; i < 8; i++ {
				testEnv.CreatePendingPod(t, replica(ns, web, i, "1"))
			}
			markUnschedulable(t, replica(ns, web, 1, "1"))
			h.waitForPods(t, ns, 8)
			h.provision(t)
			if got := plannedCPU(t, h); got != tc.then {
				t.Errorf("after the replicas came, NodeClaims sized for %d cpu, want %d", got, tc.then)
			}
			for i := range 8 {
				key := client.ObjectKeyFromObject(replica(ns, web, i, "1"))
				if _, planned := h.cluster.PlannedLaunch(key); !planned {
					t.Errorf("replica %d is not planned onto a NodeClaim", i)
				}
			}
		})
	}
}

// TestReplicasThatNeverComeAreNotLaunchedForAgain: a ReplicaSet of 8 whose
// controller makes only one pod (a ResourceQuota refusing the rest, say).
// The first pass anticipates the 7 others; when their empty NodeClaims go
// (as consolidation would remove them), the next pass launches for the one
// pod only, not for 8 again: no launch loop.
func TestReplicasThatNeverComeAreNotLaunchedForAgain(t *testing.T) {
	h := newHarnessWithOptions(t, provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
		EarlyProvisioning: true}, instanceTypes()...)
	ns := testEnv.Namespace(t)
	testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("default").Obj())
	web := replicaSetOf(t, ns, "web", 8)
	testEnv.CreatePendingPod(t, replica(ns, web, 0, "1"))
	h.waitForPods(t, ns, 1)
	h.provision(t)
	if got := plannedCPU(t, h); got != 8 {
		t.Fatalf("NodeClaims sized for %d cpu, want 8 (the replicas to come)", got)
	}
	deleteClaims(t)
	// Gone from the API server and from the manager's cache: a pass on a
	// cache that still lists them sees the pod planned onto one of them.
	env.Eventually(t, 30*time.Second, "the NodeClaims to go from the API server and the cache", func(ctx context.Context) (bool, error) {
		cached := &v1.NodeClaimList{}
		if err := h.client.List(ctx, cached); err != nil {
			return false, err
		}
		return len(h.claims(t)) == 0 && len(cached.Items) == 0, nil
	})
	for pass := range 2 {
		h.provision(t)
		if got := plannedCPU(t, h); got != 1 {
			t.Fatalf("pass %d after the NodeClaims went: NodeClaims sized for %d cpu, want 1 (the pod that exists)", pass+1, got)
		}
	}
}

// markUnschedulable marks an existing pod unschedulable, as the
// kube-scheduler does when it finds no node for it.
func markUnschedulable(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	live := &corev1.Pod{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
		t.Fatal(err)
	}
	live.Status.Conditions = append(live.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
	})
	if err := testEnv.Client.Status().Update(ctx, live); err != nil {
		t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
	}
}

// expectStandInsUnrecorded checks that the stand-ins of the last pass left
// no trace but the launch: no event names them, the model plans none of
// them, and the NodeClaims launched for them are nominated (later passes
// keep them so while the replicas are still to come: TestHeldClaims).
func expectStandInsUnrecorded(t *testing.T, h *harness, ns string) {
	t.Helper()
	evs := &corev1.EventList{}
	if err := testEnv.Client.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if strings.Contains(ev.InvolvedObject.Name, "-anticipated-") || strings.Contains(ev.Message, "-anticipated-") {
			t.Errorf("event %s %q names a stand-in", ev.Reason, ev.Message)
		}
	}
	for i := range 8 {
		key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("web-anticipated-%d", i)}
		if claim, planned := h.cluster.PlannedLaunch(key); planned {
			t.Errorf("stand-in %s is planned onto %s", key.Name, claim)
		}
	}
	for _, n := range h.cluster.Nodes() {
		if n.NodeClaim != nil && time.Until(n.NominatedUntil) < 10*time.Second {
			t.Errorf("NodeClaim %s launched for stand-ins is nominated only until %v", n.NodeClaim.Name, n.NominatedUntil)
		}
	}
}

// TestEveryClaimOfAnAnticipatedReplicaSetIsHeld: a ReplicaSet of 4 has made
// 2 pods of 5 cpu (one node each); the first pass launches 4 NodeClaims,
// two planned for the pods and two for stand-ins. The kube-scheduler may
// bind the real pods anywhere (here, to a node Dovetail did not launch),
// leaving the claims planned for them empty; while the other replicas are
// still to come, every one of the 4 stays nominated (kept from
// consolidation), not only those launched for stand-ins. In a 10,000-pod
// scale-out, consolidation removed 10 such claims and their replicas
// waited 2 minutes for new ones.
func TestEveryClaimOfAnAnticipatedReplicaSetIsHeld(t *testing.T) {
	opts := provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: time.Second, EarlyProvisioning: true}
	h := newHarnessWithOptions(t, opts, instanceTypes()...)
	ctx := context.Background()
	ns := testEnv.Namespace(t)
	testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("default").Obj())
	web := replicaSetOf(t, ns, "web", 4)
	testEnv.CreatePendingPod(t, replica(ns, web, 0, "5"))
	testEnv.CreatePendingPod(t, replica(ns, web, 1, "5"))
	h.waitForPods(t, ns, 2)
	h.provision(t)
	launched := time.Now()
	if claims := h.claims(t); len(claims) != 4 {
		t.Fatalf("%d NodeClaims, want 4 (one per 5-cpu replica, 2 of them for stand-ins)", len(claims))
	}
	for i := range 2 {
		pod := replica(ns, web, i, "5")
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "not-launched-by-dovetail"}}
		if err := testEnv.Client.SubResource("binding").Create(ctx, pod, binding); err != nil {
			t.Fatalf("binding %s: %v", pod.Name, err)
		}
	}
	env.Eventually(t, 30*time.Second, "the nomination window of the first pass to pass, with both pods bound", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := h.client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, pod := range pods.Items {
			if pod.Spec.NodeName == "" {
				return false, nil
			}
		}
		return time.Since(launched) > opts.NominationWindow(), nil
	})
	h.provision(t)
	if claims := h.claims(t); len(claims) != 4 {
		t.Fatalf("%d NodeClaims after the second pass, want the same 4", len(claims))
	}
	held := 0
	for _, n := range h.cluster.Nodes() {
		if n.NodeClaim == nil {
			continue
		}
		if time.Until(n.NominatedUntil) <= 0 {
			t.Errorf("NodeClaim %s (%v cpu) is no longer nominated while 2 replicas are still to come", n.NodeClaim.Name, n.NodeClaim.Spec.Resources.Requests.Cpu())
			continue
		}
		held++
	}
	if held != 4 {
		t.Errorf("%d NodeClaims held, want 4", held)
	}
}
