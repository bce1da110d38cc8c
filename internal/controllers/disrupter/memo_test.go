package disrupter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
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
