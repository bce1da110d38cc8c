package simulator_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// TestSkipReasons: a what-if that skips reasons places the same pods and
// reports the same unschedulable pods, without reasons.
func TestSkipReasons(t *testing.T) {
	snap := &simulator.Snapshot{
		NodePools: []simulator.NodePool{{NodePool: dtesting.MakeNodePool("default").Obj(),
			InstanceTypes: []*cloudprovider.InstanceType{dtesting.MakeInstanceType("small").CPU("2").Price(0.1).Obj()}}},
		Nodes: []simulator.Node{dtesting.MakeNode("n1").Alloc("cpu", "2", "memory", "4Gi", "pods", "10").Obj()},
	}
	fits := dtesting.MakePod("fits").Req("cpu", "1").Obj()
	huge := dtesting.MakePod("huge").Req("cpu", "64").Obj()
	m := simulator.New(snap, simulator.Options{})
	cases := map[string]struct {
		skip       bool
		wantReason bool
	}{
		"explained":       {wantReason: true},
		"reasons skipped": {skip: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := m.Solve(simulator.Request{Pods: []*corev1.Pod{fits, huge}, SkipReasons: tc.skip})
			var placed, failed []string
			for _, p := range plan.Placements {
				placed = append(placed, p.Pod.Name+"@"+p.Node)
			}
			for _, u := range plan.Unschedulable {
				failed = append(failed, u.Pod.Name)
				if (u.Reason != "") != tc.wantReason {
					t.Errorf("reason %q, want one: %v", u.Reason, tc.wantReason)
				}
			}
			if diff := cmp.Diff([]string{"fits@n1"}, placed); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"huge"}, failed); diff != "" {
				t.Errorf("unschedulable (-want +got):\n%s", diff)
			}
		})
	}
}
