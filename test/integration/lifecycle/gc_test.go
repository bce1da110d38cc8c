package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// laggingCache is an informer cache that has not caught up with the API
// server: it lists the NodeClaims as they were before the test created its
// own (as after an API server restart, when a reflector backs off for tens
// of seconds). Every other read goes to the API server.
type laggingCache struct {
	client.Client
	claims *v1.NodeClaimList
}

func (c laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*v1.NodeClaimList); ok {
		c.claims.DeepCopyInto(l)
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

// TestGarbageCollectionConfirmsWithTheAPIServer is the chaos suite's
// finding: garbage collection trusted a lagging cache and terminated the
// running instance of a NodeClaim the cache had not seen yet. It must read
// the API server before terminating, and spare an instance whose claim has
// not recorded its provider ID yet, while still collecting real orphans.
func TestGarbageCollectionConfirmsWithTheAPIServer(t *testing.T) {
	ctx := context.Background()
	before := &v1.NodeClaimList{}
	if err := testEnv.Client.List(ctx, before); err != nil {
		t.Fatal(err)
	}
	cp := fake.NewCloudProvider()
	cp.InstanceTypes = []*cloudprovider.InstanceType{dtesting.MakeInstanceType("gpu-1x").CPU("4").Memory("16Gi").Pods("20").Resource("nvidia.com/gpu", "1").Obj()}
	launch := func(name string, record bool) *v1.NodeClaim {
		nc := newClaim(t, name)
		created, err := cp.Create(ctx, nc)
		if err != nil {
			t.Fatalf("launching %s: %v", name, err)
		}
		if record {
			nc.Status.ProviderID = created.Status.ProviderID
			if err := testEnv.Client.Status().Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
		}
		return created
	}
	recorded := launch("gc-recorded", true)      // launched and recorded, unseen by the cache
	unrecorded := launch("gc-unrecorded", false) // launched, its provider ID not written yet
	orphan, err := cp.Create(ctx, &v1.NodeClaim{Spec: recorded.Spec})
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	gc := garbagecollection.NewController(clock.RealClock{}, laggingCache{Client: testEnv.Client, claims: before}, cp, m,
		garbagecollection.Options{Period: time.Hour}).WithAPIReader(testEnv.Client)
	if err := gc.Collect(ctx); err != nil {
		t.Fatalf("collecting: %v", err)
	}
	deleted := map[string]bool{}
	for _, nc := range cp.DeleteCalls {
		deleted[nc.Status.ProviderID] = true
	}
	if deleted[recorded.Status.ProviderID] {
		t.Errorf("terminated %s, whose NodeClaim the API server records (the cache lagged)", recorded.Status.ProviderID)
	}
	if deleted[unrecorded.Status.ProviderID] {
		t.Errorf("terminated %s, whose NodeClaim %s exists and has not recorded its launch yet", unrecorded.Status.ProviderID, unrecorded.Name)
	}
	if !deleted[orphan.Status.ProviderID] {
		t.Errorf("did not terminate %s, which no NodeClaim knows", orphan.Status.ProviderID)
	}
}
