package overlay

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
)

// noCRD is a reader of a cluster without the NodeOverlay CRD: every read
// fails as the REST mapper does for an unknown kind. It counts the lists.
type noCRD struct{ lists int }

func (r *noCRD) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "karpenter.sh", Kind: "NodeOverlay"}}
}

func (r *noCRD) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.lists++
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "karpenter.sh", Kind: "NodeOverlay"}}
}

// TestWithoutTheCRD: without the NodeOverlay CRD the provider's types pass
// through unchanged, and the CRD is looked up again only after a while.
func TestWithoutTheCRD(t *testing.T) {
	t.Parallel()
	inner := fake.NewCloudProvider()
	inner.InstanceTypes = types()
	reader := &noCRD{}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := Decorate(inner, reader, clk)
	for range 3 {
		its, err := c.GetInstanceTypes(context.Background(), pool("default", nil))
		if err != nil {
			t.Fatalf("GetInstanceTypes: %v", err)
		}
		if len(its) != 2 || its[0] != inner.InstanceTypes[0] {
			t.Fatalf("types %v, want the provider's, unchanged", its)
		}
	}
	if reader.lists != 1 {
		t.Errorf("%d lists within a minute, want 1", reader.lists)
	}
	clk.SetTime(clk.Now().Add(absentRecheck))
	if _, err := c.GetInstanceTypes(context.Background(), pool("default", nil)); err != nil {
		t.Fatal(err)
	}
	if reader.lists != 2 {
		t.Errorf("%d lists after a minute, want 2", reader.lists)
	}
}
