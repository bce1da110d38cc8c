package kwok

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
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

// TestListAdoptsKarpenterKWOKNodes: List reports the Nodes Karpenter's kwok
// provider launched in the default partition only, next to each partition's
// own Nodes; Nodes of no kwok provider are nobody's.
func TestListAdoptsKarpenterKWOKNodes(t *testing.T) {
	node := func(name string, labels map[string]string) client.Object {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       corev1.NodeSpec{ProviderID: ProviderIDPrefix + name},
		}
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		node("karpenter", map[string]string{KarpenterKWOKPartitionLabelKey: "a"}),
		node("default", map[string]string{PartitionLabelKey: DefaultPartition}),
		node("p1", map[string]string{PartitionLabelKey: "p1"}),
		node("p1-with-karpenter-label", map[string]string{PartitionLabelKey: "p1", KarpenterKWOKPartitionLabelKey: "a"}),
		node("unlabelled", nil),
	).Build()
	for partition, want := range map[string][]string{
		DefaultPartition: {"default", "karpenter"},
		"p1":             {"p1", "p1-with-karpenter-label"},
	} {
		c, err := New(kube, nil, Options{Partition: partition})
		if err != nil {
			t.Fatal(err)
		}
		claims, err := c.List(context.Background())
		if err != nil {
			t.Fatalf("partition %s: List: %v", partition, err)
		}
		var got []string
		for _, claim := range claims {
			got = append(got, claim.Name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("partition %s: listed instances (-want +got):\n%s", partition, diff)
		}
	}
}
