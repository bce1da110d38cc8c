package kwok

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOwnsKarpenterKWOKNodes: Nodes launched by Karpenter's kwok provider
// (its kwok-partition label, no Dovetail partition) belong to the default
// partition, so that a cluster taken over from it keeps its nodes; Dovetail's
// own partitions still see only their own Nodes.
func TestOwnsKarpenterKWOKNodes(t *testing.T) {
	node := func(labels map[string]string, providerID string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "kwok-default-abcde-x-1", Labels: labels},
			Spec:       corev1.NodeSpec{ProviderID: providerID},
		}
	}
	const id = ProviderIDPrefix + "kwok-default-abcde-x-1"
	cases := map[string]struct {
		partition string
		node      *corev1.Node
		want      bool
	}{
		"Karpenter's node, default partition":  {node: node(map[string]string{KarpenterKWOKPartitionLabelKey: "a"}, id), want: true},
		"Karpenter's node, other partition":    {partition: "p1", node: node(map[string]string{KarpenterKWOKPartitionLabelKey: "a"}, id)},
		"Dovetail's node of the partition":     {partition: "p1", node: node(map[string]string{PartitionLabelKey: "p1"}, id), want: true},
		"Dovetail's node of another partition": {node: node(map[string]string{PartitionLabelKey: "p1", KarpenterKWOKPartitionLabelKey: "a"}, id)},
		"no partition label":                   {node: node(nil, id)},
		"provider ID of another name":          {node: node(map[string]string{KarpenterKWOKPartitionLabelKey: "a"}, ProviderIDPrefix+"other")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := newTestProvider(t, Options{Partition: tc.partition})
			if got := c.owns(tc.node); got != tc.want {
				t.Errorf("owns = %v, want %v", got, tc.want)
			}
		})
	}
}
