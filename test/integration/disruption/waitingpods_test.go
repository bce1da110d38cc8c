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
	h.untaint(node)
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

// untaint removes the not-ready taint the API server puts on a new Node,
// as the node lifecycle controller (not running here) would once the
// Node is Ready.
func (h *harness) untaint(node *corev1.Node) {
	h.t.Helper()
	h.get(node)
	node.Spec.Taints = nil
	if err := h.direct.Update(h.ctx, node); err != nil {
		h.t.Fatalf("untainting node %s: %v", node.Name, err)
	}
}

// unschedulablePod creates a pending pod of app name that requests cpu and
// that the kube-scheduler reported unschedulable.
func (h *harness) unschedulablePod(name, cpu string) *corev1.Pod {
	h.t.Helper()
	return h.createUnschedulable(pausePod(name, h.ns, name, cpu))
}

// pausePod is a pod of one pause container labelled app that requests cpu.
func pausePod(name, ns, app, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
}

// createUnschedulable creates pod and marks it as the kube-scheduler marks
// a pod it found no node for.
func (h *harness) createUnschedulable(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	if err := h.direct.Create(h.ctx, pod); err != nil {
		h.t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		LastTransitionTime: metav1.NewTime(h.clock.Now()),
	}}
	if err := h.direct.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
	}
	return pod
}

// TestBoundPodsDoNotTakeThePendingPodsNodes is the failure of the e2e test
// TestNoPodPlannedTwiceWhileBindingIsHeld ("kube-scheduler paused"), on
// four nodes: four pods that want a node each are planned one per node;
// the kube-scheduler binds two of them before it stops (not necessarily
// to the nodes planned for them), and the next pass plans the other two
// onto the two nodes left. The nodes with a bound pod are nominated for
// nobody, and once consolidateAfter has passed consolidation may look at
// them; but their pods fit only on the nodes the pending pods are planned
// onto. Moving them there would leave the pending pods without a node
// (it did: consolidation deleted both nodes and the pending pods' next
// pass launched two NodeClaims). Every node stays.
func TestBoundPodsDoNotTakeThePendingPodsNodes(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		}
	})
	names := []string{"n1", "n2", "n3", "n4"}
	claims := map[string]*v1.NodeClaim{}
	for _, name := range names {
		nc, node := h.node(name, np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
		claims[name] = nc
		h.untaint(node)
	}
	// The pods the scheduler binds sort before the others: the
	// simulation places them first.
	for _, name := range []string{"a-bound-1", "a-bound-2", "z-pending-1", "z-pending-2"} {
		h.oneNodeEachPod(name)
	}
	h.settle()

	opts := provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 3 * time.Second}
	provisioner := provisioning.NewProvisioner(h.clock, h.cached, h.cluster, h.cloud, h.events, h.metrics, opts)
	pass := func() {
		t.Helper()
		h.settle()
		if err := provisioner.Reconcile(h.ctx); err != nil {
			t.Fatalf("provisioning pass: %v", err)
		}
		if n := len(h.claimsByName()); n != len(names) {
			t.Fatalf("%d NodeClaims after a pass, want %d: every pod has a node", n, len(names))
		}
	}
	pass()
	// The scheduler binds two pods, then stops.
	for i, pod := range []string{"a-bound-1", "a-bound-2"} {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: h.ns},
			Target:     corev1.ObjectReference{Kind: "Node", Name: names[i]},
		}
		if err := testEnv.Clientset.CoreV1().Pods(h.ns).Bind(h.ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding pod %s to %s: %v", pod, names[i], err)
		}
	}
	pass()

	// Past the nomination window and consolidateAfter, with a pass every
	// 10 s, and past the validation delay.
	for range 9 {
		h.clock.Step(10 * time.Second)
		pass()
		h.decide()
	}
	for _, name := range names {
		nc := claims[name]
		if h.get(nc); nc.DeletionTimestamp != nil {
			t.Errorf("node %s consolidated while the pending pods need every node", name)
		}
	}
}

// oneNodeEachPod creates a pending pod of app "held", which wants a node
// of its own (hostname anti-affinity), that the kube-scheduler reported
// unschedulable.
func (h *harness) oneNodeEachPod(name string) *corev1.Pod {
	h.t.Helper()
	held := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "held"}}
	pod := pausePod(name, h.ns, "held", "100m")
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: held}},
	}}
	return h.createUnschedulable(pod)
}

// TestAPendingPodKeepsTheRoomItWaitsFor: two small on-demand nodes each
// run a pod of 900m, and a pod of 1 CPU waits, reported unschedulable and
// not yet nominated (no provisioning pass has run). Either node has room
// for it; folding one node's pod onto the other would leave it none, so
// consolidation keeps both. The disruption loop must read that pod from
// the cluster: a pass that missed pending pods (as one listing only a
// subset of them would) removed a node here and sent the pod back to
// provisioning for a new one. Once the pod is gone, one node goes.
func TestAPendingPodKeepsTheRoomItWaitsFor(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		}
	})
	claims := map[string]*v1.NodeClaim{}
	for _, name := range []string{"n1", "n2"} {
		nc, node := h.node(name, np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
		claims[name] = nc
		h.untaint(node)
		h.pod("on-"+name, "bound", name, "900m")
	}
	waiting := h.unschedulablePod("waiting", "1")

	consolidated := func() []string {
		t.Helper()
		var out []string
		for name, nc := range claims {
			if h.get(nc); nc.DeletionTimestamp != nil {
				out = append(out, name)
			}
		}
		return out
	}
	// Past consolidateAfter, then past the validation delay.
	h.clock.Step(time.Minute)
	h.decide()
	h.clock.Step(15 * time.Second)
	h.decide()
	if gone := consolidated(); len(gone) > 0 {
		t.Fatalf("consolidated %v, taking the room pod %s waits for", gone, waiting.Name)
	}

	if err := h.direct.Delete(h.ctx, waiting); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(time.Minute)
	h.decide()
	h.clock.Step(15 * time.Second)
	h.decide()
	if gone := consolidated(); len(gone) != 1 {
		t.Fatalf("consolidated %v once nothing waited, want one of the two nodes", gone)
	}
}
