package state

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkNodesWithWaitingPods reads 1,000 machines while 10,000 planned
// pods wait to bind, as every provisioning and disruption pass does during
// a large scale-out.
func BenchmarkNodesWithWaitingPods(b *testing.B) {
	c := NewCluster(clocktesting.NewFakeClock(time.Now()))
	for i := range 1000 {
		c.UpdateNodeClaim(claim(fmt.Sprintf("c%d", i), fmt.Sprintf("fake://%d", i)))
	}
	for i := range 10000 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprint(i))}}
		c.UpdatePod(p)
		c.PlanPods(fmt.Sprintf("c%d", i%1000), []types.NamespacedName{{Namespace: "ns", Name: p.Name}})
	}
	b.ResetTimer()
	for range b.N {
		if got := len(c.Nodes()); got != 1000 {
			b.Fatalf("%d machines, want 1000", got)
		}
	}
}
