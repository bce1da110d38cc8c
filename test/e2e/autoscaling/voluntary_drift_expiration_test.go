package autoscaling_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestDriftReplacesEveryNodeWithinBudget: changing the NodePool's template
// labels drifts every node; each is replaced (replacement first) by a node
// with the new labels, and at no moment (watched from Node events) are more
// nodes disrupted than the budget's two.
func TestDriftReplacesEveryNodeWithinBudget(t *testing.T) {
	const pool, budget = "drift", 2
	startDisruption(t, disruptionPool(pool, v1.Never, nodeBudget("2")))
	ns := testEnv.Namespace(t)
	create(t, oneNodeEach(onPool(workloads.Deployment(ns, "web", 4, "500m", "512Mi"), pool)))
	pods := waitRunning(t, ns, "web", 4, 2*time.Minute)
	var old []string
	for name := range nodesOf(t, pods) {
		old = append(old, name)
	}
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)

	np := &v1.NodePool{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "blue"}
	if err := testEnv.Client.Update(context.Background(), np); err != nil {
		t.Fatal(err)
	}
	waitGone(t, 4*time.Minute, old...)
	pods = waitRunning(t, ns, "web", 4, 2*time.Minute)
	for name, node := range nodesOf(t, pods) {
		if slices.Contains(old, name) || node.Labels["team"] != "blue" {
			t.Errorf("pod node %s is not a replacement with the new labels: %v", name, node.Labels)
		}
	}
	if got := watch.Max(); got > budget {
		t.Errorf("%d nodes were disrupted at once; the budget allows %d", got, budget)
	}
	t.Logf("replaced %d drifted nodes; at most %d disrupted at once (budget %d)", len(old), watch.Max(), budget)
}

// TestExpireAfter: nodes of a pool with a short expireAfter are replaced
// once they expire (their pods run again on new nodes); nodes of a pool
// whose expireAfter is Never are kept.
func TestExpireAfter(t *testing.T) {
	expiring := disruptionPool("expiring", v1.Never)
	expiring.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("30s")
	expiring.Spec.Template.Spec.TerminationGracePeriod = ptr.To(v1.NewDuration(time.Minute))
	forever := disruptionPool("forever", v1.Never)
	startDisruption(t, expiring, forever)
	ns := testEnv.Namespace(t)
	create(t, onPool(workloads.Deployment(ns, "short", 2, "500m", "512Mi"), "expiring"))
	create(t, onPool(workloads.Deployment(ns, "long", 2, "500m", "512Mi"), "forever"))
	shortPods := waitRunning(t, ns, "short", 2, 2*time.Minute)
	longPods := waitRunning(t, ns, "long", 2, 2*time.Minute)
	var first []string
	for name := range nodesOf(t, shortPods) {
		first = append(first, name)
	}
	kept := nodesOf(t, longPods)

	waitGone(t, 2*time.Minute, first...)
	env.Eventually(t, 2*time.Minute, "the short-lived pods to run on new nodes", func(ctx context.Context) (bool, error) {
		pods, err := runningPods(ctx, ns, "short")
		if err != nil || len(pods) != 2 {
			return false, err
		}
		for _, p := range pods {
			if slices.Contains(first, p.Spec.NodeName) {
				return false, nil
			}
		}
		return true, nil
	})
	for name := range kept {
		if _, ok := poolNodes(t, "forever")[name]; !ok {
			t.Errorf("node %s of the pool whose expireAfter is Never is gone", name)
		}
	}
	expectEvent(t, "default", "DisruptionTerminating", "Expired")
}
