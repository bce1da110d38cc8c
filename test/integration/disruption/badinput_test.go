package disruption_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
)

// TestInvalidCronFailsClosed: a budget schedule the CRD accepts but cron
// cannot evaluate (hour 25) disrupts nothing and says so on the NodePool.
func TestInvalidCronFailsClosed(t *testing.T) {
	h := newHarness(t, nil)
	schedule := "0 25 * * *"
	np := h.pool("default", func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("100%"), Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}}}
	})
	nc, node := h.node("a", np, "small", fake.Zone1, v1.CapacityTypeOnDemand)
	h.clock.Step(time.Minute)

	if wait := h.decide(); wait != h.opts.PollPeriod {
		t.Errorf("next pass in %v, want the poll period (no decision)", wait)
	}
	if h.get(node); tainted(node) {
		t.Error("node tainted although its budget cannot be evaluated")
	}
	if h.get(nc); nc.DeletionTimestamp != nil {
		t.Error("node deleted although its budget cannot be evaluated")
	}
	h.expectEvent("DisruptionBlocked", np.Name, `parsing budget schedule "0 25 * * *"`)
	if got := counterValue(t, h.metrics.DisruptionAllowed.WithLabelValues(np.Name, "empty")); got != 0 {
		t.Errorf("allowed_disruptions{empty} = %v, want 0", got)
	}
}

// TestNodePoolDeletedMidDisruption: deleting the NodePool while a
// replacement launches stops the command: the node it would have drained
// is left untouched (untainted, not deleted), and the replacement is
// deleted and its instance terminated, so nothing is half-drained or
// leaked.
func TestNodePoolDeletedMidDisruption(t *testing.T) {
	h := newHarness(t, nil)
	np, nc, node := h.driftedNode()
	h.decide()
	repl := h.expectStarted(nc, node, v1.DisruptionReasonDrifted)
	// Play the lifecycle controller: the replacement (created with its
	// finalizer) gets its instance, but is not initialized yet.
	h.get(repl)
	if !controllerutil.ContainsFinalizer(repl, v1.TerminationFinalizer) {
		t.Fatalf("replacement %s created without the termination finalizer: %v", repl.Name, repl.Finalizers)
	}
	launched, err := h.cloud.Create(h.ctx, repl)
	if err != nil {
		t.Fatal(err)
	}
	h.get(repl)
	repl.Status.ProviderID = launched.Status.ProviderID
	if err := h.direct.Status().Update(h.ctx, repl); err != nil {
		t.Fatal(err)
	}
	h.step()

	if err := h.direct.Delete(h.ctx, np); err != nil {
		t.Fatal(err)
	}
	h.step()
	if h.get(node); tainted(node) || node.DeletionTimestamp != nil {
		t.Errorf("node %s left tainted (%v) or deleting (%v)", node.Name, tainted(node), node.DeletionTimestamp)
	}
	if h.get(nc); nc.DeletionTimestamp != nil {
		t.Error("the candidate was deleted by disruption after its NodePool went away")
	}
	h.get(repl)
	if repl.DeletionTimestamp == nil {
		t.Fatal("replacement not deleted")
	}
	for i := 0; i < 5 && h.exists(repl); i++ {
		h.settle()
		h.get(repl)
		if _, err := h.claims.Reconcile(h.ctx, repl); err != nil {
			t.Fatalf("terminating the replacement: %v", err)
		}
		h.clock.Step(5 * time.Second)
	}
	if h.exists(repl) {
		t.Error("replacement still exists after termination")
	}
	instances, _ := h.cloud.List(h.ctx)
	for _, i := range instances {
		if i.Status.ProviderID == launched.Status.ProviderID {
			t.Errorf("replacement instance %s leaked", launched.Status.ProviderID)
		}
	}
	h.expectEvent("DisruptionRolledBack", nc.Name, "NodePool default is being deleted")

	// The deleted pool's karpenter_nodepools_allowed_disruptions series go too.
	if n := testutil.CollectAndCount(h.metrics.DisruptionAllowed); n == 0 {
		t.Fatal("no allowed-disruptions series while the pool existed")
	}
	h.decide()
	if n := testutil.CollectAndCount(h.metrics.DisruptionAllowed); n != 0 {
		t.Errorf("%d allowed-disruptions series still exported after the only NodePool was deleted", n)
	}
}
