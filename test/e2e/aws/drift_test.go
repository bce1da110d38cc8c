package aws_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
)

// TestNewAMIDriftsNodesWithinBudget: EKS publishes a newer AL2023 AMI
// (the recommended parameter moves); the default class picks it up, the
// nodes launched from the old AMI drift (AMIDrift) and are replaced one at a
// time (budget nodes: 1, watched from Node events), and every pod ends up
// Running on a node of the new AMI.
func TestNewAMIDriftsNodesWithinBudget(t *testing.T) {
	const replicas, budget = 3, 1
	s := cluster.Begin(t)
	pool := awse2e.AWSPool("drift", localcluster.DefaultName)
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(v1.Never)
	pool.Spec.Disruption.Budgets = []v1.Budget{nodeBudget(fmt.Sprint(budget))}
	pool.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	s.Pool(pool)
	ns := s.Namespace()
	cluster.Create(t, awse2e.OneNodeEach(awse2e.Deployment(ns, "web", pool.Name, replicas, "500m", "512Mi")))
	pods := cluster.WaitRunning(t, ns, "web", replicas, 3*time.Minute)
	// Replacements may get an old node's address, and so its name: old
	// nodes are told by their instance (provider ID), not their name.
	var oldProviders, oldClaims []string
	oldImages := map[string]bool{}
	for name := range cluster.NodesOf(t, pods) {
		nc := cluster.ClaimOfNode(t, pool.Name, name)
		oldProviders, oldClaims = append(oldProviders, nc.Status.ProviderID), append(oldClaims, nc.Name)
		oldImages[nc.Status.ImageID] = true
	}
	watch := nodewatch.Watch(t, cluster.Clientset, pool.Name)
	drifted := watchDrifted(t, pool.Name)

	// EKS releases a new AL2023 AMI for both architectures.
	newImages := map[string]bool{}
	for _, arch := range []string{localaws.ArchX86_64, localaws.ArchARM64} {
		ami, err := cluster.AWS.PublishAMI(localaws.FamilyAL2023, localaws.VariantStandard, arch, "v20261201")
		if err != nil {
			t.Fatal(err)
		}
		newImages[ami.Image.ID] = true
	}
	// The class refreshes every minute; an annotation change makes it now.
	nc := &awsv1.EC2NodeClass{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: localcluster.DefaultName}, nc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(nc.DeepCopy())
	metav1.SetMetaDataAnnotation(&nc.ObjectMeta, "test.dovetail.dev/refresh", time.Now().Format(time.RFC3339Nano))
	if err := cluster.Client.Patch(context.Background(), nc, patch); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, 2*time.Minute, "the class status to list the new AMIs", func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		n := 0
		for _, ami := range nc.Status.AMIs {
			if newImages[ami.ID] {
				n++
			}
			if oldImages[ami.ID] {
				return false, nil
			}
		}
		return n == len(newImages), nil
	})

	env.Eventually(t, 6*time.Minute, fmt.Sprintf("the old NodeClaims %v to be replaced", oldClaims), func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := cluster.Client.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: pool.Name}); err != nil {
			return false, err
		}
		for _, nc := range list.Items {
			if slices.Contains(oldClaims, nc.Name) {
				return false, nil
			}
		}
		return true, nil
	})
	pods = cluster.WaitRunning(t, ns, "web", replicas, 3*time.Minute)
	for name, node := range cluster.NodesOf(t, pods) {
		if slices.Contains(oldProviders, node.Spec.ProviderID) {
			t.Errorf("pod runs on old node %s (%s)", name, node.Spec.ProviderID)
			continue
		}
		nc := cluster.ClaimOfNode(t, pool.Name, name)
		if !newImages[nc.Status.ImageID] {
			t.Errorf("node %s (NodeClaim %s) runs image %s, not one of the new AMIs %v", name, nc.Name, nc.Status.ImageID, newImages)
		}
	}
	for _, name := range oldClaims {
		c, ok := drifted.seen(name)
		switch {
		case !ok:
			t.Errorf("NodeClaim %s was replaced without being seen Drifted", name)
		case c.Reason != "AMIDrift":
			t.Errorf("NodeClaim %s drifted with reason %q (%s), want AMIDrift", name, c.Reason, c.Message)
		}
	}
	if got := watch.Max(); got > budget {
		t.Errorf("%d nodes were disrupted at once; the budget allows %d", got, budget)
	}
	c, _ := drifted.seen(oldClaims[0])
	t.Logf("replaced %d nodes of images %v by nodes of %v; at most %d disrupted at once (budget %d); Drifted reason %q message %q",
		len(oldClaims), keys(oldImages), keys(newImages), watch.Max(), budget, c.Reason, c.Message)
}

// driftedWatch records the first True Drifted condition each NodeClaim of
// a pool showed, polled from the API server.
type driftedWatch struct {
	mu    sync.Mutex
	first map[string]metav1.Condition
}

func watchDrifted(t *testing.T, pool string) *driftedWatch {
	t.Helper()
	w := &driftedWatch{first: map[string]metav1.Condition{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list := &v1.NodeClaimList{}
			if err := cluster.Client.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err == nil {
				w.mu.Lock()
				for _, nc := range list.Items {
					if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
						if _, ok := w.first[nc.Name]; !ok {
							w.first[nc.Name] = *c
						}
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *driftedWatch) seen(claim string) (metav1.Condition, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.first[claim]
	return c, ok
}
