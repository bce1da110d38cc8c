package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
)

// TestPlannedNodeOutlastsTheNominationWindow: a provisioning pass plans a
// pending pod onto an empty node, and then the kube-scheduler takes a
// minute to bind it (no other pass runs meanwhile): longer than the
// nomination window (10 s here) and the pool's consolidateAfter (30 s).
// The node must not be consolidated as empty while the pod waits for it;
// removing it would send the pod back to provisioning for a second node
// (it did, before the model held planned nodes nominated until their pods
// bind: the node was consolidated and the next pass launched a second
// NodeClaim for the one pod). Once the pod is gone, the node is empty and is removed as usual.
func TestPlannedNodeOutlastsTheNominationWindow(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	nc, node := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	// The API server taints a new Node not-ready; the node lifecycle
	// controller (not running here) would remove the taint once it is Ready.
	h.get(node)
	node.Spec.Taints = nil
	if err := h.direct.Update(h.ctx, node); err != nil {
		t.Fatalf("untainting node %s: %v", node.Name, err)
	}
	waiting := h.unschedulablePod("waiting", "500m")
	h.settle()

	opts := provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 3 * time.Second}
	provisioner := provisioning.NewProvisioner(h.clock, h.cached, h.cluster, h.cloud, h.events, h.metrics, opts)
	if err := provisioner.Reconcile(h.ctx); err != nil {
		t.Fatalf("provisioning pass: %v", err)
	}
	if n := len(h.claimsByName()); n != 1 {
		t.Fatalf("%d NodeClaims after the pass, want 1: the pod fits on node %s", n, node.Name)
	}

	h.clock.Step(time.Minute)
	if got := opts.NominationWindow(); got >= time.Minute {
		t.Fatalf("nomination window %s does not end within the minute", got)
	}
	h.decide()
	h.clock.Step(15 * time.Second)
	h.decide()
	// The next pass finds the pod still waiting.
	h.settle()
	if err := provisioner.Reconcile(h.ctx); err != nil {
		t.Fatalf("provisioning pass: %v", err)
	}
	h.get(nc)
	if claims := h.claimsByName(); nc.DeletionTimestamp != nil || len(claims) != 1 {
		t.Fatalf("node %s, planned for pod %s that still waits to bind: consolidated %v, and %d NodeClaims for the one pod (want not consolidated, 1)",
			node.Name, waiting.Name, nc.DeletionTimestamp != nil, len(claims))
	}
	if h.get(node); tainted(node) {
		t.Fatalf("node %s, planned for a waiting pod, was tainted for disruption", node.Name)
	}

	// The pod goes: past the last pass's window, the empty node is removed
	// after the validation delay.
	if err := h.direct.Delete(h.ctx, waiting); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(opts.NominationWindow())
	h.decide()
	h.clock.Step(15 * time.Second)
	h.decide()
	if h.get(nc); nc.DeletionTimestamp == nil {
		t.Fatalf("node %s, empty and planned for nothing, was not consolidated", node.Name)
	}
}

// unschedulablePod creates a pending pod that the kube-scheduler reported
// unschedulable, requesting cpu.
func (h *harness) unschedulablePod(name, cpu string) *corev1.Pod {
	h.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	if err := h.direct.Create(h.ctx, pod); err != nil {
		h.t.Fatalf("creating pod %s: %v", name, err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		LastTransitionTime: metav1.NewTime(h.clock.Now()),
	}}
	if err := h.direct.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("marking pod %s unschedulable: %v", name, err)
	}
	return pod
}
