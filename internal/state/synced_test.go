package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// listed is what an informer cache lists; Synced only lists, so Get is
// never called.
type listed struct {
	claims []v1.NodeClaim
	nodes  []corev1.Node
}

func (l listed) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("Synced does not Get")
}

func (l listed) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch list := list.(type) {
	case *v1.NodeClaimList:
		list.Items = l.claims
	case *corev1.NodeList:
		list.Items = l.nodes
	default:
		return fmt.Errorf("unexpected list %T", list)
	}
	return nil
}

// TestSynced: the model is synced only when it holds what the cache lists
// and nothing else but the claims the provisioner created and the cache
// has not delivered yet. A claim the model still holds after the cache
// dropped it offered its room to the next pass, which then launched
// nothing for a pending pod (seen in CI).
func TestSynced(t *testing.T) {
	a, b := claim("a", "kwok://a"), claim("b", "kwok://b")
	na := node("a", "kwok://a")
	for _, tc := range []struct {
		name  string
		model func(c *Cluster)
		cache listed
		want  bool
	}{
		{"both empty", func(*Cluster) {}, listed{}, true},
		{"same claims and nodes", func(c *Cluster) { c.UpdateNodeClaim(a); c.UpdateNode(na) },
			listed{claims: []v1.NodeClaim{*a}, nodes: []corev1.Node{*na}}, true},
		{"a listed claim the model lacks", func(*Cluster) {}, listed{claims: []v1.NodeClaim{*a}}, false},
		{"a listed node the model lacks", func(*Cluster) {}, listed{nodes: []corev1.Node{*na}}, false},
		{"a claim with another provider ID", func(c *Cluster) { c.UpdateNodeClaim(claim("a", "kwok://other")) },
			listed{claims: []v1.NodeClaim{*a}}, false},
		{"a deleted claim the model still holds", func(c *Cluster) { c.UpdateNodeClaim(a); c.UpdateNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*a}}, false},
		{"a deleted node the model still holds", func(c *Cluster) { c.UpdateNode(na) }, listed{}, false},
		{"a just-created claim the cache has not delivered", func(c *Cluster) { c.UpdateNodeClaim(a); c.AddCreatedNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*a}}, true},
		{"a just-created claim the cache has delivered first", func(c *Cluster) { c.AddCreatedNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*b}}, true},
		{"a just-created claim and a deleted one", func(c *Cluster) { c.UpdateNodeClaim(a); c.AddCreatedNodeClaim(b) },
			listed{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
			tc.model(c)
			got, err := c.Synced(context.Background(), tc.cache)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Synced = %v, want %v", got, tc.want)
			}
		})
	}
}
