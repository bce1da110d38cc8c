package nodepool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/status"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestStatusFollowsClaims checks that a NodePool's status.resources and
// status.nodes follow its NodeClaims as they launch, grow, move to another
// pool and go, now that only the claim updates that can move the sums
// (capacity, deletion, pool label) wake the controller.
func TestStatusFollowsClaims(t *testing.T) {
	testEnv.StartManager(t, func(mgr manager.Manager) error {
		m, err := metrics.New(prometheus.NewRegistry())
		if err != nil {
			return err
		}
		return status.NewController(mgr.GetClient(), m).Register(context.Background(), mgr)
	})
	ctx := context.Background()
	for _, name := range []string{"status-a", "status-b"} {
		np := localcluster.DefaultNodePool()
		np.Name = name
		if err := testEnv.Client.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, name := range []string{"status-a", "status-b"} {
			_ = testEnv.Client.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	claim := func(name, pool, cpu string) *v1.NodeClaim {
		nc := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool}},
			Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists}},
			}},
		}
		if cpu != "" {
			nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		return nc
	}
	// want waits until the pool's status reads nodes and cpu.
	want := func(pool string, nodes int64, cpu string) {
		t.Helper()
		env.Eventually(t, 30*time.Second, fmt.Sprintf("nodepool %s at %d nodes and %s cpu", pool, nodes, cpu), func(ctx context.Context) (bool, error) {
			np := &v1.NodePool{}
			if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
				return false, err
			}
			got := np.Status.Resources[corev1.ResourceCPU]
			return np.Status.Nodes != nil && *np.Status.Nodes == nodes && got.Cmp(resource.MustParse(cpu)) == 0, nil
		})
	}
	update := func(name string, mutate func(*v1.NodeClaim), subresource bool) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			nc := &v1.NodeClaim{}
			if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return err
			}
			mutate(nc)
			if subresource {
				return testEnv.Client.Status().Update(ctx, nc)
			}
			return testEnv.Client.Update(ctx, nc)
		})
		if err != nil {
			t.Fatalf("updating nodeclaim %s: %v", name, err)
		}
	}

	// A claim that has not launched counts as a node without capacity.
	testEnv.CreateWithStatus(t, claim("status-1", "status-a", ""))
	want("status-a", 1, "0")
	// Its launch writes the capacity.
	update("status-1", func(nc *v1.NodeClaim) {
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	}, true)
	want("status-a", 1, "2")
	testEnv.CreateWithStatus(t, claim("status-2", "status-a", "4"))
	want("status-a", 2, "6")
	// The claim moves to the other pool: both pools are summed again.
	update("status-2", func(nc *v1.NodeClaim) { nc.Labels[v1.NodePoolLabelKey] = "status-b" }, false)
	want("status-a", 1, "2")
	want("status-b", 1, "4")
	// A claim being deleted no longer counts, though it still exists.
	update("status-1", func(nc *v1.NodeClaim) { nc.Finalizers = []string{"test.dovetail.dev/hold"} }, false)
	if err := testEnv.Client.Delete(ctx, claim("status-1", "", "")); err != nil {
		t.Fatal(err)
	}
	want("status-a", 0, "0")
	update("status-1", func(nc *v1.NodeClaim) { nc.Finalizers = nil }, false)
	if err := testEnv.Client.Delete(ctx, claim("status-2", "", "")); err != nil {
		t.Fatal(err)
	}
	want("status-b", 0, "0")
}
