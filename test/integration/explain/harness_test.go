package explain_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// reset deletes the cluster-scoped objects earlier tests left.
func reset(t *testing.T) {
	t.Helper()
	nodes, claims, pools, classes := &corev1.NodeList{}, &v1.NodeClaimList{}, &v1.NodePoolList{}, &kwokv1alpha1.KWOKNodeClassList{}
	testEnv.DeleteAll(t, claims, func() []client.Object { return env.Objects(claims.Items) })
	testEnv.DeleteAll(t, nodes, func() []client.Object { return env.Objects(nodes.Items) })
	testEnv.DeleteAll(t, pools, func() []client.Object { return env.Objects(pools.Items) })
	testEnv.DeleteAll(t, classes, func() []client.Object { return env.Objects(classes.Items) })
	overlays := &v1alpha1.NodeOverlayList{}
	testEnv.DeleteAll(t, overlays, func() []client.Object { return env.Objects(overlays.Items) })
}

// createNodeClass creates a KWOKNodeClass with its Ready condition.
func createNodeClass(t *testing.T, name string, ready bool, message string) {
	t.Helper()
	ctx := context.Background()
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := testEnv.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: "Ready", Status: status, Reason: "Test", Message: message})
	if err := testEnv.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
}

// explain reads the cluster through the API and explains one object at now.
func explain(t *testing.T, kind, namespace, name string, now time.Time) *whatif.Explanation {
	t.Helper()
	objs, err := whatif.FromCluster(context.Background(), testEnv.Client)
	if err != nil {
		t.Fatal(err)
	}
	e, err := whatif.Explain(objs, kind, namespace, name, whatif.Options{Now: now})
	if err != nil {
		t.Fatalf("explaining %s %s: %v", kind, name, err)
	}
	return e
}

func catalogType(t *testing.T, name string) *cloudprovider.InstanceType {
	t.Helper()
	types, err := whatif.CatalogInstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no instance type %s", name)
	return nil
}
