package state

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestPlannedMachine: a waiting pod's planned machine is known whether or
// not the pod was handed off, until the pod binds or goes, the plan is
// dropped, or the machine is being removed.
func TestPlannedMachine(t *testing.T) {
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	for name, tc := range map[string]struct {
		after  func(c *Cluster)
		wantOn string // "" = not planned
	}{
		"planned, not handed off": {wantOn: "nc-1"},
		"planned and handed off":  {after: func(c *Cluster) { c.HandOff([]types.NamespacedName{p}) }, wantOn: "nc-1"},
		"planned again elsewhere": {after: func(c *Cluster) { c.PlanPods("nc-2", []types.NamespacedName{p}) }, wantOn: "nc-2"},
		"planned nowhere":         {after: func(c *Cluster) { c.PlanPods("", []types.NamespacedName{p}) }},
		"pod bound":               {after: func(c *Cluster) { c.UpdatePod(pod("p", "ip-1", corev1.PodRunning)) }},
		"pod deleted":             {after: func(c *Cluster) { c.DeletePod(p) }},
		"claim deleted":           {after: func(c *Cluster) { c.DeleteNodeClaim("nc-1") }},
		"machine being removed":   {after: func(c *Cluster) { c.MarkForDeletion("kwok://nc-1") }},
	} {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
			c.UpdatePod(pod("p", "", corev1.PodPending))
			c.UpdateNodeClaim(claim("nc-1", "kwok://nc-1"))
			c.PlanPods("nc-1", []types.NamespacedName{p})
			if tc.after != nil {
				tc.after(c)
			}
			got, ok := c.PlannedMachine(p)
			if (tc.wantOn != "") != ok || got != tc.wantOn {
				t.Errorf("PlannedMachine = %q, %v; want %q", got, ok, tc.wantOn)
			}
		})
	}
}
