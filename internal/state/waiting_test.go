package state

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestPlannedPodsKeepTheirMachineNominated: a machine that pending pods were
// planned onto stays nominated after the nomination window while one of
// them still waits to bind, and only until then: the pod binds (anywhere),
// is deleted or finishes, the next pass plans it elsewhere or nowhere, or
// the machine goes. A time window alone let emptiness consolidation remove
// a node whose pods a slow kube-scheduler had not bound yet.
func TestPlannedPodsKeepTheirMachineNominated(t *testing.T) {
	const window = 10 * time.Second
	waiting := func(name string) *corev1.Pod { return pod(name, "", corev1.PodPending) }
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	cases := map[string]struct {
		// after changes the model once the window has passed.
		after func(c *Cluster)
		// want is whether node-a, planned for pod p, is still nominated.
		want bool
	}{
		"pod still waiting":       {want: true},
		"pod bound to the node":   {after: func(c *Cluster) { c.UpdatePod(pod("p", "node-a", corev1.PodRunning)) }},
		"pod bound elsewhere":     {after: func(c *Cluster) { c.UpdatePod(pod("p", "node-b", corev1.PodRunning)) }},
		"pod deleted":             {after: func(c *Cluster) { c.DeletePod(key("p")) }},
		"pod failed":              {after: func(c *Cluster) { c.UpdatePod(pod("p", "", corev1.PodFailed)) }},
		"pod planned elsewhere":   {after: func(c *Cluster) { c.PlanPods("node-b", []types.NamespacedName{key("p")}) }},
		"pod could not be placed": {after: func(c *Cluster) { c.PlanPods("", []types.NamespacedName{key("p")}) }},
		"pod being deleted": {after: func(c *Cluster) {
			p := waiting("p")
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			c.UpdatePod(p)
		}},
		"node deleted, then back under the same name": {after: func(c *Cluster) {
			c.DeleteNode("node-a")
			c.UpdateNode(node("node-a", "kwok://a"))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			c := NewCluster(clk)
			c.UpdateNode(node("node-a", "kwok://a"))
			c.UpdateNode(node("node-b", "kwok://b"))
			c.UpdatePod(waiting("p"))
			c.UpdatePod(waiting("other"))
			c.NominateNodeForPod("node-a", window)
			c.PlanPods("node-a", []types.NamespacedName{key("p")})

			clk.Step(window + time.Second)
			if tc.after != nil {
				tc.after(c)
			}
			got := nominatedAt(t, c, "node-a", clk.Now())
			if got != tc.want {
				t.Errorf("node-a nominated %s after its window: %v, want %v", window+time.Second, got, tc.want)
			}
			if nominatedAt(t, c, "node-b", clk.Now()) && name != "pod planned elsewhere" {
				t.Errorf("node-b, planned for nothing, is nominated")
			}
		})
	}
}

// TestPlannedPodsKeepAnInFlightClaimNominated: pods planned onto a new
// NodeClaim keep it nominated through launch and registration, under the
// claim's name and then under its Node's, until they bind.
func TestPlannedPodsKeepAnInFlightClaimNominated(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCluster(clk)
	c.UpdatePod(pod("p", "", corev1.PodPending))
	c.PlanPods("nc-1", []types.NamespacedName{{Namespace: "ns", Name: "p"}})
	c.UpdateNodeClaim(claim("nc-1", ""))
	clk.Step(time.Hour)
	if !nominatedAt(t, c, "nc-1", clk.Now()) {
		t.Errorf("in-flight claim nc-1 is not nominated while its pod waits")
	}
	c.UpdateNodeClaim(claim("nc-1", "aws:///zone-a/i-1"))
	c.UpdateNode(node("ip-10-0-0-1", "aws:///zone-a/i-1"))
	if !nominatedAt(t, c, "ip-10-0-0-1", clk.Now()) {
		t.Errorf("registered node of nc-1 is not nominated while its pod waits")
	}
	c.UpdatePod(pod("p", "ip-10-0-0-1", corev1.PodRunning))
	if nominatedAt(t, c, "ip-10-0-0-1", clk.Now()) {
		t.Errorf("node of nc-1 still nominated after its pod bound")
	}
}

// nominatedAt reports whether the machine named name is nominated at now.
func nominatedAt(t *testing.T, c *Cluster, name string, now time.Time) bool {
	t.Helper()
	for _, n := range c.Nodes() {
		if n.Name() == name {
			return n.NominatedUntil.After(now)
		}
	}
	t.Fatalf("no machine %s in the model", name)
	return false
}
