package state

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestPlannedLaunch: a waiting pod planned onto a NodeClaim being launched
// is known whether or not it was handed off, until the pod binds or goes,
// the plan is dropped or moves to a Node, the claim registers a Node, goes,
// is forgotten unconfirmed, or is being removed.
func TestPlannedLaunch(t *testing.T) {
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	for name, tc := range map[string]struct {
		after  func(c *Cluster)
		wantOn string // "" = not planned
	}{
		"planned, not handed off": {wantOn: "nc-1"},
		"planned and handed off":  {after: func(c *Cluster) { c.HandOff([]types.NamespacedName{p}) }, wantOn: "nc-1"},
		"planned again elsewhere": {after: func(c *Cluster) {
			c.UpdateNodeClaim(claim("nc-2", "kwok://nc-2"))
			c.PlanPods("nc-2", []types.NamespacedName{p})
		}, wantOn: "nc-2"},
		"planned onto a Node's room": {after: func(c *Cluster) {
			c.UpdateNode(node("ip-1", "kwok://ip-1"))
			c.PlanPods("ip-1", []types.NamespacedName{p})
		}},
		"its Node registered":           {after: func(c *Cluster) { c.UpdateNode(node("nc-1", "kwok://nc-1")) }},
		"planned onto an unknown claim": {after: func(c *Cluster) { c.PlanPods("nc-9", []types.NamespacedName{p}) }},
		"planned nowhere":               {after: func(c *Cluster) { c.PlanPods("", []types.NamespacedName{p}) }},
		"pod bound":                     {after: func(c *Cluster) { c.UpdatePod(pod("p", "ip-1", corev1.PodRunning)) }},
		"pod deleted":                   {after: func(c *Cluster) { c.DeletePod(p) }},
		"claim deleted":                 {after: func(c *Cluster) { c.DeleteNodeClaim("nc-1") }},
		"machine being removed":         {after: func(c *Cluster) { c.MarkForDeletion("kwok://nc-1") }},
	} {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
			c.UpdatePod(pod("p", "", corev1.PodPending))
			c.UpdateNodeClaim(claim("nc-1", "kwok://nc-1"))
			c.PlanPods("nc-1", []types.NamespacedName{p})
			if tc.after != nil {
				tc.after(c)
			}
			got, ok := c.PlannedLaunch(p)
			if (tc.wantOn != "") != ok || got != tc.wantOn {
				t.Errorf("PlannedLaunch = %q, %v; want %q", got, ok, tc.wantOn)
			}
		})
	}
}

// TestUnconfirmedClaimTakesItsPlansAlong: a claim the provisioner created
// and the informer never delivered is forgotten with the pods planned onto
// it, which then need a pass again.
func TestUnconfirmedClaimTakesItsPlansAlong(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := NewCluster(clk)
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	c.UpdatePod(pod("p", "", corev1.PodPending))
	c.AddCreatedNodeClaim(claim("nc-1", ""))
	c.PlanPods("nc-1", []types.NamespacedName{p})
	c.HandOff([]types.NamespacedName{p})
	if _, ok := c.PlannedLaunch(p); !ok {
		t.Fatal("the pod is not planned onto the created claim")
	}
	clk.Step(time.Minute)
	c.ForgetUnconfirmedNodeClaims(time.Minute)
	if got, ok := c.PlannedLaunch(p); ok {
		t.Errorf("PlannedLaunch = %q after its claim was forgotten, want none", got)
	}
	if got, ok := c.HandOffTarget(p); ok {
		t.Errorf("HandOffTarget = %q after its claim was forgotten, want none", got)
	}
}

// TestRefuseHandOff: a refusal drops the pod's plan (its machine is no
// longer awaited, the pod no longer handed off) and lasts until the pod
// binds or goes or the refused Node goes; a pod the model does not see
// waiting records none.
func TestRefuseHandOff(t *testing.T) {
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	waitingPod := pod("p", "", corev1.PodPending)
	waitingPod.UID = "uid-p"
	// handedOffOnto makes the model see the pod waiting and Nodes ip-1 and
	// ip-2, and hands the pod off onto machine.
	handedOffOnto := func(c *Cluster, machine string) {
		c.UpdatePod(waitingPod)
		c.UpdateNode(node("ip-1", "kwok://ip-1"))
		c.UpdateNode(node("ip-2", "kwok://ip-2"))
		c.PlanPods(machine, []types.NamespacedName{p})
		c.HandOff([]types.NamespacedName{p})
	}
	for name, tc := range map[string]struct {
		after func(c *Cluster)
		want  []string
	}{
		"refused":           {want: []string{"ip-1"}},
		"refused two nodes": {after: func(c *Cluster) { c.RefuseHandOff(waitingPod, "ip-0", "ip-0") }, want: []string{"ip-0", "ip-1"}},
		"pod recreated": {after: func(c *Cluster) {
			recreated := waitingPod.DeepCopy()
			recreated.UID = "uid-p-2"
			c.UpdatePod(recreated)
			c.RefuseHandOff(recreated, "ip-2", "ip-2")
		}, want: nil},
		"pod bound":               {after: func(c *Cluster) { c.UpdatePod(pod("p", "ip-2", corev1.PodRunning)) }},
		"pod deleted":             {after: func(c *Cluster) { c.DeletePod(p) }},
		"refused node deleted":    {after: func(c *Cluster) { c.DeleteNode("ip-1") }},
		"another node deleted":    {after: func(c *Cluster) { c.DeleteNode("ip-2") }, want: []string{"ip-1"}},
		"planned again elsewhere": {after: func(c *Cluster) { c.PlanPods("ip-2", []types.NamespacedName{p}) }, want: []string{"ip-1"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
			handedOffOnto(c, "ip-1")
			c.RefuseHandOff(waitingPod, "ip-1", "ip-1")
			if _, ok := c.HandOffTarget(p); ok {
				t.Fatal("the refused pod is still handed off")
			}
			if got := c.awaitedMachines(); got["ip-1"] {
				t.Fatal("the refused node is still awaited by the pod")
			}
			if tc.after != nil {
				tc.after(c)
			}
			if got := c.Refused([]*corev1.Pod{waitingPod})[waitingPod.UID]; !slices.Equal(got, tc.want) {
				t.Errorf("Refused = %v, want %v", got, tc.want)
			}
		})
	}
	c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
	c.RefuseHandOff(waitingPod, "ip-1", "ip-1")
	if got := c.Refused([]*corev1.Pod{waitingPod}); len(got) != 0 {
		t.Errorf("a pod the model never saw waiting has refusals %v", got)
	}
	// A refusal drops the plan it was about, not a newer one.
	handedOffOnto(c, "ip-2")
	c.RefuseHandOff(waitingPod, "ip-1", "ip-1")
	if target, ok := c.HandOffTarget(p); !ok || target != "ip-2" {
		t.Errorf("a refusal of ip-1 dropped the newer plan onto ip-2: HandOffTarget = %q, %v", target, ok)
	}
}
