package informer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestReconcileHandsOverTheStoresObject: the model gets the informer
// store's own object (the same pointer, no copy) for namespaced and
// cluster-scoped kinds, and a removal once the store no longer has it.
func TestReconcileHandsOverTheStoresObject(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	for _, obj := range []client.Object{pod, node} {
		store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
		if err := store.Add(obj); err != nil {
			t.Fatal(err)
		}
		var updated client.Object
		var removed []client.ObjectKey
		c := &Controller{name: "test", store: store,
			update: func(o client.Object) { updated = o },
			remove: func(k client.ObjectKey) { removed = append(removed, k) }}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
		if _, err := c.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("%s: Reconcile: %v", obj.GetName(), err)
		}
		if updated != obj {
			t.Errorf("%s: the model got %p, want the store's object %p", obj.GetName(), updated, obj)
		}
		if err := store.Delete(obj); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("%s: Reconcile after the delete: %v", obj.GetName(), err)
		}
		if len(removed) != 1 || removed[0] != req.NamespacedName {
			t.Errorf("%s: removed %v, want %v once", obj.GetName(), removed, req.NamespacedName)
		}
	}
}
