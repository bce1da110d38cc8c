package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// listed is what an informer cache lists, or what the API server holds:
// Synced lists the cache and gets single claims from the API server.
type listed struct {
	claims []v1.NodeClaim
	nodes  []corev1.Node
	err    error
}

func (l listed) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if l.err != nil {
		return l.err
	}
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || meta.Kind != "NodeClaim" {
		return fmt.Errorf("Synced gets only nodeclaims' metadata, not %T %v", obj, obj.GetObjectKind().GroupVersionKind())
	}
	for i := range l.claims {
		if l.claims[i].Name == key.Name {
			meta.ObjectMeta = *l.claims[i].ObjectMeta.DeepCopy()
			return nil
		}
	}
	return apierrors.NewNotFound(v1.SchemeGroupVersion.WithResource("nodeclaims").GroupResource(), key.Name)
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
		// api is what the API server holds; nil means no API reader.
		api     *listed
		want    bool
		wantErr bool
	}{
		{"both empty", func(*Cluster) {}, listed{}, nil, true, false},
		{"same claims and nodes", func(c *Cluster) { c.UpdateNodeClaim(a); c.UpdateNode(na) },
			listed{claims: []v1.NodeClaim{*a}, nodes: []corev1.Node{*na}}, nil, true, false},
		{"a listed claim the model lacks", func(*Cluster) {}, listed{claims: []v1.NodeClaim{*a}}, nil, false, false},
		{"a listed node the model lacks", func(*Cluster) {}, listed{nodes: []corev1.Node{*na}}, nil, false, false},
		{"a claim with another provider ID", func(c *Cluster) { c.UpdateNodeClaim(claim("a", "kwok://other")) },
			listed{claims: []v1.NodeClaim{*a}}, nil, false, false},
		{"a deleted claim the model still holds", func(c *Cluster) { c.UpdateNodeClaim(a); c.UpdateNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*a}}, nil, false, false},
		{"a deleted node the model still holds", func(c *Cluster) { c.UpdateNode(na) }, listed{}, nil, false, false},
		{"a just-created claim the cache has not delivered", func(c *Cluster) { c.UpdateNodeClaim(a); c.AddCreatedNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*a}}, &listed{claims: []v1.NodeClaim{*a, *b}}, true, false},
		{"a just-created claim deleted before the model saw it go", func(c *Cluster) { c.UpdateNodeClaim(a); c.AddCreatedNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*a}}, &listed{claims: []v1.NodeClaim{*a}}, false, false},
		{"a just-created claim and no API reader to ask", func(c *Cluster) { c.UpdateNodeClaim(a); c.AddCreatedNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*a}}, nil, false, false},
		{"a just-created claim and the API server failing", func(c *Cluster) { c.AddCreatedNodeClaim(b) },
			listed{}, &listed{err: fmt.Errorf("connection refused")}, false, true},
		{"a just-created claim the cache has delivered first", func(c *Cluster) { c.AddCreatedNodeClaim(b) },
			listed{claims: []v1.NodeClaim{*b}}, nil, true, false},
		{"a just-created claim and a deleted one", func(c *Cluster) { c.UpdateNodeClaim(a); c.AddCreatedNodeClaim(b) },
			listed{}, &listed{claims: []v1.NodeClaim{*b}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)))
			if tc.api != nil {
				c.WithAPIReader(*tc.api)
			}
			tc.model(c)
			got, err := c.Synced(context.Background(), tc.cache)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Synced error %v, want an error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Synced = %v, want %v", got, tc.want)
			}
		})
	}
	// A created claim found deleted is forgotten at once: the next call is
	// synced (its informer may never report it, if a relist missed both its
	// creation and its deletion) and its plans are gone.
	c := NewCluster(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))).WithAPIReader(listed{})
	c.UpdatePod(pod("p", "", corev1.PodPending))
	c.AddCreatedNodeClaim(b)
	c.PlanPods(b.Name, []types.NamespacedName{{Namespace: "ns", Name: "p"}})
	for i, want := range []bool{false, true} {
		got, err := c.Synced(context.Background(), listed{})
		if err != nil || got != want {
			t.Errorf("call %d: Synced = %v, %v; want %v", i+1, got, err, want)
		}
	}
	if _, ok := c.PlannedLaunch(types.NamespacedName{Namespace: "ns", Name: "p"}); ok {
		t.Error("the pod is still planned onto the deleted claim")
	}
}
