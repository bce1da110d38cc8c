package chart_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion/webhook"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestProvisioningAndConsolidationWithChartRBAC runs the controller with the
// chart's environment as the chart's ServiceAccount: pending pods get
// nodes, a scale-down is consolidated, the webhook's CA is injected into
// the CRDs, and the API server refused nothing.
func TestProvisioningAndConsolidationWithChartRBAC(t *testing.T) {
	start := time.Now()
	c := startController(t, serviceAccountKubeconfig(t, releaseNS, releaseName), mountWebhookSecret(t))
	ns := setupWorkload(t, "5s")

	// 1. Provisioning: four one-CPU replicas get nodes and run.
	create(t, workloads.Deployment(ns, "inflate", 4, "1", "256Mi"))
	workloads.WaitRunning(t, kube, ns, "inflate", 4, 2*time.Minute)
	nodesBefore := len(dovetailNodes(t))
	t.Logf("provisioned %d nodes for 4 pods in %v", nodesBefore, time.Since(start).Round(time.Millisecond))

	// 2. Consolidation: one replica left fits on one node.
	scaleStart := time.Now()
	workloads.Scale(t, kube, ns, "inflate", 1)
	env.Eventually(t, 3*time.Minute, "consolidation down to one node", func(ctx context.Context) (bool, error) {
		return len(dovetailNodes(t)) == 1, nil
	})
	workloads.WaitRunning(t, kube, ns, "inflate", 1, time.Minute)
	t.Logf("consolidated %d -> 1 nodes in %v", nodesBefore, time.Since(scaleStart).Round(time.Millisecond))

	// 3. The conversion webhook's rotator (same identity) injected its CA.
	for _, name := range webhook.DefaultCRDNames() {
		env.Eventually(t, time.Minute, "the CA in CRD "+name, func(ctx context.Context) (bool, error) {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			ca, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
			return ca != "", nil
		})
	}

	// 4. Every metric the chart's dashboards query is served.
	t.Run("dashboard metrics", func(t *testing.T) { checkDashboardMetrics(t, c) })

	// 5. Nothing was refused: the chart's RBAC covers every call.
	if log := c.log(t); strings.Contains(log, "forbidden") {
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "forbidden") {
				t.Errorf("the API server refused a call: %.600s", line)
			}
		}
	}
}

// TestMissingPermissionFails: the same controller whose core ClusterRole
// lacks one rule (creating NodeClaims) launches nothing, and says why: the
// test above would fail, so it does check the chart's RBAC.
func TestMissingPermissionFails(t *testing.T) {
	const sa = "dovetail-minus-one"
	bindChartRolesWithout(t, sa, "karpenter.sh", "nodeclaims", "create")
	c := startController(t, serviceAccountKubeconfig(t, releaseNS, sa), mountWebhookSecret(t))
	ns := setupWorkload(t, "5s")
	create(t, workloads.Deployment(ns, "inflate", 2, "1", "256Mi"))
	env.Eventually(t, 2*time.Minute, "the controller to be refused creating a NodeClaim", func(context.Context) (bool, error) {
		return strings.Contains(c.log(t), `cannot create resource \"nodeclaims\"`), nil
	})
	claims := &v1.NodeClaimList{}
	if err := kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("%d NodeClaims exist without the right to create them", len(claims.Items))
	}
	pods := &corev1.PodList{}
	if err := kube.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s was scheduled to %s without any launch", p.Name, p.Spec.NodeName)
		}
	}
}

// setupWorkload creates the default KWOKNodeClass and a NodePool that
// consolidates after consolidateAfter, and a namespace; at the end of the
// test cleanupWorkload removes them.
func setupWorkload(t *testing.T, consolidateAfter string) string {
	t.Helper()
	pool := localcluster.DefaultNodePool()
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(consolidateAfter)
	nodeClass := localcluster.DefaultNodeClass()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chart-"}}
	for _, obj := range []client.Object{nodeClass, pool, namespace} {
		create(t, obj)
	}
	t.Cleanup(func() { cleanupWorkload(t, namespace, pool, nodeClass) })
	return namespace.Name
}

// cleanupWorkload deletes the namespace and the NodePool, waits until every
// NodeClaim and Dovetail node is gone (the test's controller, stopped later,
// drains them; a claim a controller without the rights cannot finish is
// released after a minute), then deletes the NodeClass.
func cleanupWorkload(t *testing.T, namespace, pool, nodeClass client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{namespace, pool} {
		_ = kube.Delete(ctx, obj)
	}
	claims := &v1.NodeClaimList{}
	if err := kube.List(ctx, claims); err == nil {
		for i := range claims.Items {
			_ = kube.Delete(ctx, &claims.Items[i])
		}
	}
	env.Eventually(t, 3*time.Minute, "every NodeClaim and Dovetail node to be gone", func(ctx context.Context) (bool, error) {
		if err := kube.List(ctx, claims); err != nil {
			return false, err
		}
		for i := range claims.Items {
			claim := &claims.Items[i]
			if len(claim.Finalizers) > 0 && !claim.DeletionTimestamp.IsZero() && time.Since(claim.DeletionTimestamp.Time) > time.Minute {
				claim.Finalizers = nil
				_ = kube.Update(ctx, claim)
			}
		}
		return len(claims.Items) == 0 && len(dovetailNodes(t)) == 0, nil
	})
	_ = kube.Delete(ctx, nodeClass)
}

// create creates obj as the admin.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// dovetailNodes lists the nodes Dovetail launched.
func dovetailNodes(t *testing.T) []corev1.Node {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := kube.List(context.Background(), nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		t.Fatal(err)
	}
	return nodes.Items
}
