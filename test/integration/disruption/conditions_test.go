package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/disruptionstatus"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/expiration"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
)

// TestExpirationDeletesAtTheRightTime: a claim is deleted once
// creation + expireAfter has passed on the clock, with the reason recorded
// and counted; before that the controller comes back exactly then; Never
// keeps it.
func TestExpirationDeletesAtTheRightTime(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	expiring := h.claimFor("expiring", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	expiring.Spec.ExpireAfter = v1.MustParseNillableDuration("1h")
	expiring.Spec.TerminationGracePeriod = &v1.Duration{Duration: 5 * time.Minute}
	forever := h.claimFor("forever", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	forever.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	for _, nc := range []*v1.NodeClaim{expiring, forever} {
		if err := h.direct.Create(h.ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.SetTime(expiring.CreationTimestamp.Time)
	reconcile := func(nc *v1.NodeClaim) time.Duration {
		t.Helper()
		h.settle()
		h.get(nc)
		result, err := h.expiry.Reconcile(h.ctx, nc)
		if err != nil {
			t.Fatalf("reconciling %s: %v", nc.Name, err)
		}
		return result.RequeueAfter
	}

	if got := reconcile(expiring); got != time.Hour {
		t.Errorf("requeue after %v, want 1h", got)
	}
	h.clock.Step(59 * time.Minute)
	if got := reconcile(expiring); got != time.Minute {
		t.Errorf("requeue after %v, want 1m", got)
	}
	if h.get(expiring); expiring.DeletionTimestamp != nil {
		t.Fatal("deleted before it expired")
	}
	h.clock.Step(time.Minute)
	reconcile(expiring)
	h.get(expiring)
	if expiring.DeletionTimestamp == nil {
		t.Fatal("not deleted once expired")
	}
	cond := meta.FindStatusCondition(expiring.Status.Conditions, v1.ConditionTypeDisruptionReason)
	if cond == nil || cond.Reason != string(v1.DisruptionReasonExpired) {
		t.Errorf("DisruptionReason = %+v, want Expired", cond)
	}
	h.expectEvent("DisruptionTerminating", "expiring", "Expired (expireAfter 1h passed")
	if got := counterValue(t, h.metrics.NodeClaimsDisrupted.WithLabelValues(expiration.MetricReason, "default")); got != 1 {
		t.Errorf("nodeclaims_disrupted_total{reason=expired} = %v, want 1", got)
	}

	h.clock.Step(1000 * time.Hour)
	if got := reconcile(forever); got != 0 {
		t.Errorf("a claim that never expires requeues after %v", got)
	}
	if h.get(forever); forever.DeletionTimestamp != nil {
		t.Error("a claim with expireAfter Never was deleted")
	}
}

// TestDriftConditions: Drifted is set with the reason of the drift (the
// template hash, the requirements, the NodeClass) and cleared when the
// drift goes away.
func TestDriftConditions(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot}},
		}
	})
	nc, _ := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	expect := func(wantReason string) {
		t.Helper()
		h.settle()
		h.get(nc)
		if _, err := h.conditions.Reconcile(h.ctx, nc); err != nil {
			t.Fatalf("reconciling: %v", err)
		}
		h.get(nc)
		cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDrifted)
		switch {
		case wantReason == "" && cond != nil:
			t.Errorf("Drifted = %s/%s %q, want none", cond.Status, cond.Reason, cond.Message)
		case wantReason != "" && (cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != wantReason):
			t.Errorf("Drifted = %+v, want True/%s", cond, wantReason)
		}
	}
	update := func(mutate func(*v1.NodePool)) {
		t.Helper()
		h.get(np)
		mutate(np)
		if err := h.direct.Update(h.ctx, np); err != nil {
			t.Fatal(err)
		}
	}

	expect("")
	update(func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "b"} })
	expect(disruption.DriftReasonNodePool)
	update(func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels = nil })
	expect("")
	update(func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot} })
	expect(disruption.DriftReasonRequirements)
	update(func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}
	})
	expect("")
	h.cloud.Lock()
	h.cloud.Drifted = "ImageChanged"
	h.cloud.Unlock()
	expect("ImageChanged")
	h.cloud.Lock()
	h.cloud.Drifted = ""
	h.cloud.Unlock()
	expect("")
}

// TestConsolidatableCondition: Consolidatable turns True once
// consolidateAfter has passed since the last pod event, and the controller
// comes back exactly then.
func TestConsolidatableCondition(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	nc, _ := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	reconcile := func() (time.Duration, *metav1.Condition) {
		t.Helper()
		h.settle()
		h.get(nc)
		result, err := h.conditions.Reconcile(h.ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		h.get(nc)
		return result.RequeueAfter, meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeConsolidatable)
	}
	h.clock.Step(10 * time.Second)
	wait, cond := reconcile()
	if wait != 20*time.Second || cond == nil || cond.Status != metav1.ConditionFalse {
		t.Errorf("after 10s: requeue %v, condition %+v; want 20s and False", wait, cond)
	}
	// A pod event restarts the wait without another write of the claim:
	// only the stamp changes it.
	stamp, err := disruptionstatus.LastPodEventTimePatch(h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.Status().Patch(h.ctx, nc, client.RawPatch(types.MergePatchType, stamp)); err != nil {
		t.Fatal(err)
	}
	stamped := nc.ResourceVersion
	h.clock.Step(10 * time.Second)
	wait, cond = reconcile()
	if wait != 20*time.Second || cond == nil || cond.Status != metav1.ConditionFalse {
		t.Errorf("10s after a pod event: requeue %v, condition %+v; want 20s and False", wait, cond)
	}
	if nc.ResourceVersion != stamped {
		t.Errorf("the claim was written again after its pod event stamp (resourceVersion %s, was %s): condition %+v", nc.ResourceVersion, stamped, cond)
	}
	h.clock.Step(20 * time.Second)
	if _, cond = reconcile(); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("30s after the pod event: condition %+v, want True", cond)
	}
}

// TestPodEventsStampTheNodeClaim: a pod bound to a managed node stamps its
// claim's lastPodEventTime; a second event within 10 s is written when the
// window ends.
func TestPodEventsStampTheNodeClaim(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	nc, node := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	h.pod("p1", "web", node.Name, "100m")
	reconcile := func() time.Duration {
		t.Helper()
		h.settle()
		result, err := h.podEvents.Reconcile(h.ctx, reconcileRequest(node.Name))
		if err != nil {
			t.Fatal(err)
		}
		return result.RequeueAfter
	}
	first := h.clock.Now()
	if wait := reconcile(); wait != 0 {
		t.Errorf("first event requeues after %v", wait)
	}
	if h.get(nc); !nc.Status.LastPodEventTime.Time.Equal(first.Truncate(time.Second)) {
		t.Errorf("lastPodEventTime = %v, want %v", nc.Status.LastPodEventTime, first)
	}
	h.clock.Step(4 * time.Second)
	if wait := reconcile(); wait != 6*time.Second {
		t.Errorf("event inside the dedupe window requeues after %v, want 6s", wait)
	}
	h.clock.Step(6 * time.Second)
	reconcile()
	if h.get(nc); !nc.Status.LastPodEventTime.Time.Equal(first.Add(10 * time.Second).Truncate(time.Second)) {
		t.Errorf("lastPodEventTime = %v, want the end of the window", nc.Status.LastPodEventTime)
	}
}

// TestPodEventStampIsNotLocked: the stamp applies to a claim another
// writer changed since it was read (it is not locked to a version), and
// keeps that writer's change.
func TestPodEventStampIsNotLocked(t *testing.T) {
	h := newHarness(t, nil)
	np := h.pool("default", nil)
	nc, _ := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	read := nc.DeepCopy()
	bump := client.MergeFrom(nc.DeepCopy())
	nc.Annotations = map[string]string{"example.com/touched": "true"}
	if err := testEnv.Client.Patch(h.ctx, nc, bump); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	patch, err := disruptionstatus.LastPodEventTimePatch(at)
	if err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.Status().Patch(h.ctx, read, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("stamping a claim read before another write: %v", err)
	}
	h.get(nc)
	if !nc.Status.LastPodEventTime.Time.Equal(at) || nc.Annotations["example.com/touched"] != "true" {
		t.Errorf("lastPodEventTime %v, annotations %v; want %v and the other writer's annotation", nc.Status.LastPodEventTime, nc.Annotations, at)
	}
}

func reconcileRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}
