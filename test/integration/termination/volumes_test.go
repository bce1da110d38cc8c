package termination_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination"
)

// deleteCalls returns how often the provider's Delete was called.
func (h *harness) deleteCalls() int {
	h.cloud.Lock()
	defer h.cloud.Unlock()
	return len(h.cloud.DeleteCalls)
}

// TestAwaitVolumeDetachment keeps a drained node's instance until the
// VolumeAttachments of its drained pods are gone; the attachment of a pod
// the drain leaves alone (it tolerates the disrupted taint) does not count.
func TestAwaitVolumeDetachment(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pv, pvc, va := h.makeVolume("data", node.Name)
	logsPV, logsPVC, logsVA := h.makeVolume("logs", node.Name)
	for _, obj := range []client.Object{pv, pvc, va, logsPV, logsPVC, logsVA} {
		h.create(obj)
	}
	h.create(h.makePod("app", node.Name).claim("data", pvc.Name).obj())
	h.create(h.makePod("agent", node.Name).claim("logs", logsPVC.Name).
		tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists}).obj())

	h.startTermination(node)
	h.reconcileNode(node)
	h.expectTerminating("app")
	h.finish()
	if got := h.reconcileNode(node); got.RequeueAfter <= 0 {
		t.Errorf("reconcile with a volume attached = %+v, want a requeue", got)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeDrained, metav1.ConditionTrue, termination.ReasonDrained, "")
	h.expectCondition(nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionUnknown, termination.ReasonAwaitingVolumeDetachment, "("+va.Name+")")
	h.expectEvent(termination.ReasonAwaitingVolumeDetachment, node.Name, va.Name)
	if got := h.deleteCalls(); got != 0 {
		t.Errorf("provider Delete called %d times while a volume was attached", got)
	}

	// The attach/detach controller detaches the volume.
	h.delete(va)
	h.reconcileNode(node)
	h.expectCondition(nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionTrue, termination.ReasonVolumesDetached, "")
	h.reconcileUntilGone(node, nodeClaim)
}

// TestVolumeDetachmentNotAwaitedPastDeadline stops waiting for volumes once
// the termination grace period has elapsed.
func TestVolumeDetachmentNotAwaitedPastDeadline(t *testing.T) {
	h := newHarness(t)
	nodeClaim := h.launch(h.makeNodeClaim("claim").terminationGracePeriod(time.Minute).obj())
	node := h.makeNode(nodeClaim).obj()
	h.create(node)
	pv, pvc, va := h.makeVolume("data", node.Name)
	h.create(pv)
	h.create(pvc)
	h.create(va)
	h.create(h.makePod("app", node.Name).claim("data", pvc.Name).obj())

	h.delete(nodeClaim)
	h.reconcileNodeClaim(nodeClaim)
	deadline := h.deadlineOf(nodeClaim)
	h.reconcileNode(node)
	h.expectTerminating("app")
	h.finish()
	if got := h.reconcileNode(node); got.RequeueAfter <= 0 {
		t.Errorf("reconcile with a volume attached = %+v, want a requeue", got)
	}
	h.expectCondition(nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionUnknown, termination.ReasonAwaitingVolumeDetachment, va.Name)

	h.clock.SetTime(deadline)
	h.reconcileNode(node)
	h.expectCondition(nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionFalse, termination.ReasonTerminationGracePeriodElapsed, "1 volume attachments left")
	if got := h.deleteCalls(); got == 0 {
		t.Error("instance not terminated after the termination grace period elapsed")
	}
	h.reconcileUntilGone(node, nodeClaim)
}
