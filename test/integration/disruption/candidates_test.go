package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestConsolidationCandidatesAreTainted: three large nodes at an eighth of
// their cpu, and a full one, in a pool whose budget allows no disruption
// for now (a scheduled budget of zero, in force). Consolidation can take
// none of them now, but it means to remove the under-used ones once the
// budget allows: they get the
// consolidation-candidate taint (PreferNoSchedule), so that the
// kube-scheduler puts new pods elsewhere, and the full node does not. When
// pods fill them, the taint goes. With the gate off, a taint left on a
// node is removed.
func TestConsolidationCandidatesAreTainted(t *testing.T) {
	h := newHarness(t, nil)
	np := h.heldPool()
	nodes := map[string]*corev1.Node{}
	for _, name := range []string{"a", "b", "c", "full"} {
		_, nodes[name] = h.node(name, np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
	}
	for _, name := range []string{"a", "b", "c"} {
		h.pod("p-"+name, "web", nodes[name].Name, "1")
	}
	h.pod("p-full", "db", nodes["full"].Name, "7")
	h.clock.Step(time.Minute)

	// 1. The under-used nodes are marked, and nothing is disrupted.
	h.decide()
	marked := h.candidateTainted()
	if len(marked) < 2 || slices.Contains(marked, nodes["full"].Name) {
		t.Fatalf("nodes with the consolidation-candidate taint: %v; want two or more of the under-used ones, not %s", marked, nodes["full"].Name)
	}
	for _, name := range marked {
		node := &corev1.Node{}
		if err := h.direct.Get(h.ctx, client.ObjectKey{Name: name}, node); err != nil {
			t.Fatal(err)
		}
		if tainted(node) {
			t.Errorf("node %s was disrupted although the budget allows none", name)
		}
		for _, taint := range node.Spec.Taints {
			if machine.IsConsolidationCandidateTaint(taint) && taint.Effect != corev1.TaintEffectPreferNoSchedule {
				t.Errorf("node %s: candidate taint %v, want the PreferNoSchedule effect", name, taint)
			}
		}
	}

	// 2. Pods fill the marked nodes: consolidation no longer means to
	// remove them, and the taint goes.
	for i, name := range marked {
		h.pod(fmt.Sprintf("filler-%d", i), "web", name, "6")
	}
	h.decide()
	if got := h.candidateTainted(); len(got) != 0 {
		t.Fatalf("full nodes still marked: %v", got)
	}

	// 3. With the gate off, a taint an earlier process left is removed.
	h.opts.CandidateTaints = false
	h.restart()
	node := nodes["a"]
	h.get(node)
	node.Spec.Taints = append(node.Spec.Taints, machine.ConsolidationCandidateTaint())
	if err := h.direct.Update(h.ctx, node); err != nil {
		t.Fatal(err)
	}
	h.decide()
	if got := h.candidateTainted(); len(got) != 0 {
		t.Fatalf("with the gate off, nodes still marked: %v", got)
	}
}

// candidateTainted lists the Nodes, read from the API server, that carry
// the consolidation-candidate taint, by name.
func (h *harness) candidateTainted() []string {
	h.t.Helper()
	nodes := &corev1.NodeList{}
	if err := h.direct.List(h.ctx, nodes); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		if slices.ContainsFunc(n.Spec.Taints, machine.IsConsolidationCandidateTaint) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestCandidateTaintWriteIsRetried: a marking write that fails (here the
// first Node patch, refused once) is tried again on the next pass, though
// nothing else changed and consolidation itself is skipped by the memo.
func TestCandidateTaintWriteIsRetried(t *testing.T) {
	h := newHarness(t, nil)
	refused := false
	failing := env.Intercept(h.cached, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok && !refused {
				refused = true
				return apierrors.NewServiceUnavailable("refused once by the test")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	h.loop, h.queue = disrupter.NewController(h.clock, failing, h.cluster, h.cloud, h.events, h.metrics, h.opts)
	np := h.heldPool()
	for _, name := range []string{"a", "b", "c"} {
		_, node := h.node(name, np, "large", fake.Zone1, v1.CapacityTypeOnDemand)
		h.pod("p-"+name, "web", node.Name, "1")
	}
	h.clock.Step(time.Minute)

	h.decide()
	first := h.candidateTainted()
	if !refused {
		t.Fatal("no Node patch was made; the check needs the marking to write")
	}
	h.decide()
	second := h.candidateTainted()
	if len(second) <= len(first) {
		t.Fatalf("marked %v after the refused write and %v after the next pass; want the refused node marked on the next pass", first, second)
	}
}

// heldPool creates the default pool with a budget that allows no
// disruption for now: zero nodes, on a schedule that is always in force
// (a budget of zero without a schedule turns consolidation off for good,
// and its nodes are not marked).
func (h *harness) heldPool() *v1.NodePool {
	h.t.Helper()
	always := "* * * * *"
	return h.pool("default", func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("0"), Schedule: &always, Duration: &metav1.Duration{Duration: time.Hour}}}
	})
}
