package awse2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// Create creates obj, failing the test if it cannot.
func (c *Cluster) Create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := c.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", env.Describe(obj), err)
	}
}

// Seed is the endpoint's seeded account.
func (c *Cluster) Seed() localaws.Seed { return c.AWS.Seed() }

// LiveInstances lists the pending or running instances launched for the
// NodePools (any NodePool when none is given).
func (c *Cluster) LiveInstances(pools ...string) []ec2.Instance {
	var out []ec2.Instance
	for _, inst := range c.AWS.EC2().Instances() {
		if inst.State != ec2.StatePending && inst.State != ec2.StateRunning {
			continue
		}
		pool, ok := inst.Tags[TagNodePool]
		if !ok || (len(pools) > 0 && !slices.Contains(pools, pool)) {
			continue
		}
		out = append(out, inst)
	}
	return out
}

// RunningPods lists the app's Running pods that are not being deleted.
func (c *Cluster) RunningPods(ctx context.Context, ns, app string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	return running, nil
}

// WaitRunning waits until n pods of the app are Running.
func (c *Cluster) WaitRunning(t testing.TB, ns, app string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	env.Eventually(t, timeout, fmt.Sprintf("%d %s pods Running", n, app), func(ctx context.Context) (bool, error) {
		var err error
		pods, err = c.RunningPods(ctx, ns, app)
		return len(pods) == n, err
	})
	return pods
}

// NodesOf returns the nodes the pods run on, by name.
func (c *Cluster) NodesOf(t testing.TB, pods []corev1.Pod) map[string]*corev1.Node {
	t.Helper()
	out := map[string]*corev1.Node{}
	for _, p := range pods {
		if _, ok := out[p.Spec.NodeName]; ok {
			continue
		}
		node := &corev1.Node{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatalf("reading node %s: %v", p.Spec.NodeName, err)
		}
		out[node.Name] = node
	}
	return out
}

// PoolClaims lists the NodePool's NodeClaims.
func (c *Cluster) PoolClaims(t testing.TB, pool string) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := c.Client.List(context.Background(), list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// ClaimOfNode returns the NodeClaim of the NodePool whose status names the node.
func (c *Cluster) ClaimOfNode(t testing.TB, pool, node string) *v1.NodeClaim {
	t.Helper()
	for _, nc := range c.PoolClaims(t, pool) {
		if nc.Status.NodeName == node {
			return &nc
		}
	}
	t.Fatalf("no NodeClaim of pool %s names node %s", pool, node)
	return nil
}

// WaitClassReady waits until the EC2NodeClass is Ready and returns it.
func (c *Cluster) WaitClassReady(t testing.TB, name string, timeout time.Duration) *awsv1.EC2NodeClass {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	env.Eventually(t, timeout, "EC2NodeClass "+name+" to be Ready", func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeReady), nil
	})
	return nc
}
