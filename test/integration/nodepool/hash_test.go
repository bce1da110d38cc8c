package nodepool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestHashVersionUpgrade follows Karpenter's rule for a hash version
// change: a NodePool last hashed by an older Dovetail (dovetail-v1) gets
// the v3 hash, and its NodeClaims of another version are re-stamped with
// v3 and the pool's hash (not drifted); a claim already Drifted keeps its
// old hash, and a claim already on v3 is left alone.
func TestHashVersionUpgrade(t *testing.T) {
	ctx := context.Background()
	np := localcluster.DefaultNodePool()
	np.Name = "upgraded"
	np.Annotations = map[string]string{
		v1.NodePoolHashAnnotationKey:        "0123456789abcdef",
		v1.NodePoolHashVersionAnnotationKey: nodepoolutil.LegacyHashVersion,
	}
	want := nodepoolutil.TemplateHash(np)
	claim := func(name, hash, version string, drifted bool) *v1.NodeClaim {
		t.Helper()
		nc := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: np.Name}, Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey:        hash,
				v1.NodePoolHashVersionAnnotationKey: version,
			}},
			Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: *np.Spec.Template.Spec.DeepCopy()},
		}
		if err := testEnv.Client.Create(ctx, nc); err != nil {
			t.Fatalf("creating nodeclaim %s: %v", name, err)
		}
		t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, nc) })
		if drifted {
			meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted"})
			if err := testEnv.Client.Status().Update(ctx, nc); err != nil {
				t.Fatalf("marking nodeclaim %s drifted: %v", name, err)
			}
		}
		return nc
	}
	claim("upgraded-legacy", "0123456789abcdef", nodepoolutil.LegacyHashVersion, false)
	claim("upgraded-drifted", "0123456789abcdef", nodepoolutil.LegacyHashVersion, true)
	claim("upgraded-current", "42", nodepoolutil.HashVersion, false)
	if err := testEnv.Client.Create(ctx, np); err != nil {
		t.Fatalf("creating nodepool: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, np) })
	startControllers(t)

	wantAnnotations := map[string][2]string{
		"upgraded":         {want, nodepoolutil.HashVersion},
		"upgraded-legacy":  {want, nodepoolutil.HashVersion},
		"upgraded-drifted": {"0123456789abcdef", nodepoolutil.HashVersion},
		"upgraded-current": {"42", nodepoolutil.HashVersion},
	}
	env.Eventually(t, 30*time.Second, "the hash annotations of the pool and its claims", func(ctx context.Context) (bool, error) {
		got := map[string][2]string{}
		pool := &v1.NodePool{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(np), pool); err != nil {
			return false, err
		}
		got[pool.Name] = [2]string{pool.Annotations[v1.NodePoolHashAnnotationKey], pool.Annotations[v1.NodePoolHashVersionAnnotationKey]}
		claims := &v1.NodeClaimList{}
		if err := testEnv.Client.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
			return false, err
		}
		for _, nc := range claims.Items {
			got[nc.Name] = [2]string{nc.Annotations[v1.NodePoolHashAnnotationKey], nc.Annotations[v1.NodePoolHashVersionAnnotationKey]}
		}
		if diff := cmp.Diff(wantAnnotations, got); diff != "" {
			return false, fmt.Errorf("annotations (-want +got):\n%s", diff)
		}
		return true, nil
	})
}
