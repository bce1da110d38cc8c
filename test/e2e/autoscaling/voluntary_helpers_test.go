package autoscaling_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
)

// disruptionPool is the default NodePool renamed, with the given
// consolidation settings and budgets, nodes that never expire, and only
// on-demand capacity (so that consolidation can replace nodes by cheaper
// ones; spot-to-spot replacement is off by default).
func disruptionPool(name, consolidateAfter string, budgets ...v1.Budget) *v1.NodePool {
	np := localcluster.DefaultNodePool()
	np.Name = name
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(consolidateAfter)
	np.Spec.Disruption.Budgets = budgets
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == v1.CapacityTypeLabelKey {
			np.Spec.Template.Spec.Requirements[i].Values = []string{v1.CapacityTypeOnDemand}
		}
	}
	return np
}

func nodeBudget(nodes string) v1.Budget { return v1.Budget{Nodes: intstr.Parse(nodes)} }

// startDisruption is startDovetail for disruption tests: it creates the
// default KWOKNodeClass and the pools, and runs the controller with fast
// batching and a 1 s validation delay until the test ends.
func startDisruption(t *testing.T, pools ...*v1.NodePool) {
	t.Helper()
	startDisruptionWith(t, nil, pools...)
}

// startDisruptionWith is startDisruption with the controller's options
// tuned further by tune (nil: none).
func startDisruptionWith(t *testing.T, tune func(*operator.Options), pools ...*v1.NodePool) {
	t.Helper()
	ctx := context.Background()
	objs := append([]client.Object{localcluster.DefaultNodeClass()}, asObjects(pools)...)
	removeAtEnd(t, objs...)
	for _, obj := range objs {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", env.Describe(obj), err)
		}
	}
	controller := run(t, func(opts *operator.Options) {
		opts.DisruptionValidationDelay = time.Second
		if tune != nil {
			tune(opts)
		}
	})
	t.Cleanup(func() { teardown(t, controller) })
}

func asObjects(pools []*v1.NodePool) []client.Object {
	out := make([]client.Object, len(pools))
	for i, p := range pools {
		out[i] = p
	}
	return out
}

// poolNodes lists the pool's Nodes that are not being deleted, by name.
func poolNodes(t *testing.T, pool string) map[string]*corev1.Node {
	t.Helper()
	list := &corev1.NodeList{}
	if err := testEnv.Client.List(context.Background(), list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Node{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// hourlyPrice is what the pool's nodes cost per hour, at the kwok
// provider's catalog prices for their instance type, zone and capacity type.
func hourlyPrice(t *testing.T, pool string) float64 {
	t.Helper()
	provider, err := kwok.New(testEnv.Client, clock.RealClock{}, kwok.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types, err := provider.GetInstanceTypes(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for name, node := range poolNodes(t, pool) {
		found := false
		for _, it := range types {
			if it.Name != node.Labels[corev1.LabelInstanceTypeStable] {
				continue
			}
			for _, o := range it.Offerings {
				if o.Zone == node.Labels[corev1.LabelTopologyZone] && o.CapacityType == node.Labels[v1.CapacityTypeLabelKey] {
					total, found = total+o.Price, true
					break
				}
			}
		}
		if !found {
			t.Fatalf("no price for node %s (%s)", name, node.Labels[corev1.LabelInstanceTypeStable])
		}
	}
	return total
}

// onPool pins the Deployment's pods to a NodePool.
func onPool(d *appsv1.Deployment, pool string) *appsv1.Deployment {
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: pool}
	return d
}

// oneNodeEach gives each of the Deployment's pods a node of its own.
func oneNodeEach(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
		}},
	}}
	return d
}

// expectNodesStay checks that none of the nodes is disrupted for d.
func expectNodesStay(t *testing.T, w *nodewatch.Disruptions, d time.Duration, nodes ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		for _, n := range nodes {
			if w.WasDisrupted(n) {
				t.Fatalf("node %s was disrupted", n)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitGone waits until none of the nodes exists.
func waitGone(t *testing.T, timeout time.Duration, nodes ...string) {
	t.Helper()
	env.Eventually(t, timeout, fmt.Sprintf("nodes %v to be gone", nodes), func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			err := testEnv.Client.Get(ctx, client.ObjectKey{Name: n}, &corev1.Node{})
			if err == nil {
				return false, nil
			}
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// quiet reports whether no node of the pool is being disrupted and every
// NodeClaim of the pool is initialized and not being deleted.
func quiet(ctx context.Context, pool string) (bool, error) {
	claims := &v1.NodeClaimList{}
	if err := testEnv.Client.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return false, err
	}
	for _, nc := range claims.Items {
		if nc.DeletionTimestamp != nil || !isTrue(nc.Status.Conditions, v1.ConditionTypeInitialized) {
			return false, nil
		}
	}
	nodes := &corev1.NodeList{}
	if err := testEnv.Client.List(ctx, nodes, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey }) {
			return false, nil
		}
	}
	return len(nodes.Items) == len(claims.Items), nil
}

func isTrue(conditions []metav1.Condition, conditionType string) bool {
	for _, c := range conditions {
		if c.Type == conditionType {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// settle waits until the pool has been quiet (nothing disrupted, every
// claim initialized, the same nodes) for longer than a consolidation takes
// to be decided (consolidateAfter, the validation delay and a poll).
func settle(t *testing.T, pool string, timeout time.Duration) {
	t.Helper()
	const still = 20 * time.Second
	var last string
	var since time.Time
	env.Eventually(t, timeout, "pool "+pool+" to settle", func(ctx context.Context) (bool, error) {
		ok, err := quiet(ctx, pool)
		if err != nil {
			return false, err
		}
		names := slices.Sorted(maps.Keys(poolNodes(t, pool)))
		key := fmt.Sprint(ok, names)
		now := time.Now()
		if key != last {
			last, since = key, now
		}
		return ok && now.Sub(since) > still, nil
	})
}
