package machine_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// TestSnapshotConsolidationCandidate: the consolidation-candidate taint is
// a hint for the kube-scheduler, not a constraint: the simulator's node
// does not carry it (a PreferNoSchedule taint would make provisioning
// launch a node rather than use this one) but is marked Disfavored; the
// node's other taints stay.
func TestSnapshotConsolidationCandidate(t *testing.T) {
	dedicated := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	for name, tc := range map[string]struct {
		taints         []corev1.Taint
		wantTaints     []corev1.Taint
		wantDisfavored bool
	}{
		"candidate":     {taints: []corev1.Taint{dedicated, machine.ConsolidationCandidateTaint()}, wantTaints: []corev1.Taint{dedicated}, wantDisfavored: true},
		"not candidate": {taints: []corev1.Taint{dedicated}, wantTaints: []corev1.Taint{dedicated}},
	} {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: tc.taints}}
			snap := machine.NewSnapshot([]*machine.Machine{{Node: node}}, nil, nil, nil)
			if len(snap.Nodes) != 1 {
				t.Fatalf("snapshot has %d nodes, want 1", len(snap.Nodes))
			}
			got := snap.Nodes[0]
			if diff := cmp.Diff(tc.wantTaints, got.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if got.Disfavored != tc.wantDisfavored {
				t.Errorf("Disfavored = %v, want %v", got.Disfavored, tc.wantDisfavored)
			}
			if len(node.Spec.Taints) != len(tc.taints) {
				t.Errorf("the Node's taints were changed: %v", node.Spec.Taints)
			}
		})
	}
}
