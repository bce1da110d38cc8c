package disrupter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// TestFingerprintSeesRefusedNodes: a hand-off giving up on a node changes
// which room a pending pod holds (disruption.Input.Refused), so a memoized
// consolidation decision must be taken again.
func TestFingerprintSeesRefusedNodes(t *testing.T) {
	pending := dtesting.MakePod("p").Obj()
	in := func(refused map[types.UID][]string) disruption.Input {
		return disruption.Input{PendingPods: []*corev1.Pod{pending}, Refused: refused}
	}
	base := fingerprintOf(in(nil))
	if got := fingerprintOf(in(map[types.UID][]string{})); got != base {
		t.Errorf("an empty Refused changed the fingerprint")
	}
	refused := fingerprintOf(in(map[types.UID][]string{pending.UID: {"n1"}}))
	if refused == base {
		t.Errorf("a refused node left the fingerprint unchanged")
	}
	if other := fingerprintOf(in(map[types.UID][]string{pending.UID: {"n2"}})); other == refused {
		t.Errorf("refusals of different nodes have the same fingerprint")
	}
}

// TestFingerprintIgnoresTheCandidateTaint: the loop writes the
// consolidation-candidate taint itself after deciding; if that write
// changed the fingerprint, every pass that marks a node would make the
// next one run consolidation again. Any other taint does change it.
func TestFingerprintIgnoresTheCandidateTaint(t *testing.T) {
	in := func(taints ...corev1.Taint) disruption.Input {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: taints}}
		return disruption.Input{Nodes: []*machine.Machine{{Node: node}}}
	}
	base := fingerprintOf(in())
	if got := fingerprintOf(in(machine.ConsolidationCandidateTaint())); got != base {
		t.Errorf("the consolidation-candidate taint changed the fingerprint")
	}
	if got := fingerprintOf(in(corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})); got == base {
		t.Errorf("another taint left the fingerprint unchanged")
	}
}
