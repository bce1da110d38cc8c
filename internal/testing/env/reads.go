package env

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Get reads obj's current state from c into obj, failing the test on error.
func Get(ctx context.Context, t testing.TB, c client.Reader, obj client.Object) {
	t.Helper()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("getting %T %s: %v", obj, obj.GetName(), err)
	}
}

// Exists reports whether obj still exists (obj itself is left as it is),
// failing the test on an error other than not found.
func Exists(ctx context.Context, t testing.TB, c client.Reader, obj client.Object) bool {
	t.Helper()
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("getting %T %s: %v", obj, obj.GetName(), err)
	}
	return true
}

// ResourceVersions lists the kind of list through c and returns each
// object's resourceVersion by namespace/name. Comparing the direct client's
// answer with a cache's tells whether the cache has caught up.
func ResourceVersions(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) (map[string]string, error) {
	list = list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := map[string]string{}
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		out[obj.GetNamespace()+"/"+obj.GetName()] = obj.GetResourceVersion()
		return nil
	})
	return out, err
}
