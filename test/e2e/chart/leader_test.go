package chart_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// leaseDuration is controller-runtime's default, which Dovetail keeps.
const leaseDuration = 15 * time.Second

// TestTwoReplicasElectOneLeaderAndHandOver runs two replicas as the chart
// does: one leads; killed (SIGKILL, no release of the Lease) while pods
// wait for nodes, the other takes over within the lease duration (plus a
// retry period) and the pods get nodes without a duplicate launch.
func TestTwoReplicasElectOneLeaderAndHandOver(t *testing.T) {
	kubeconfig, certDir := serviceAccountKubeconfig(t, releaseNS, releaseName), mountWebhookSecret(t)
	replicas := []*controller{startController(t, kubeconfig, certDir), startController(t, kubeconfig, certDir)}
	ns := setupWorkload(t, "Never")

	// 1. Exactly one leader.
	var leader, follower *controller
	env.Eventually(t, time.Minute, "one of two replicas to lead", func(ctx context.Context) (bool, error) {
		var leaders []*controller
		for _, r := range replicas {
			ok, err := r.isLeader(ctx)
			if err != nil {
				return false, err
			}
			if ok {
				leaders = append(leaders, r)
			}
		}
		if len(leaders) > 1 {
			t.Fatalf("%d replicas lead at once", len(leaders))
		}
		if len(leaders) == 1 {
			leader = leaders[0]
			follower = replicas[0]
			if leader == replicas[0] {
				follower = replicas[1]
			}
		}
		return len(leaders) == 1, nil
	})

	// 2. Pods arrive; the leader is killed while their batch is open.
	create(t, workloads.Deployment(ns, "inflate", 3, "1", "256Mi"))
	leader.Kill(t)
	killed := time.Now()
	env.Eventually(t, leaseDuration+10*time.Second, "the other replica to take over", func(ctx context.Context) (bool, error) {
		return follower.isLeader(ctx)
	})
	handover := time.Since(killed)
	// The follower may only take a Lease that has not been renewed for the
	// lease duration; it retries every 2 s (jittered up to 2.4 s), and the
	// leader renewed at most one retry period before it died.
	if limit := leaseDuration + 5*time.Second; handover > limit {
		t.Errorf("hand-over took %v, want at most %v (the lease duration %v plus retry periods)", handover, limit, leaseDuration)
	}

	// 3. The pods run, and every launched node runs one of them: no launch
	// was made twice (consolidation is off, so a duplicate would stay).
	workloads.WaitRunning(t, kube, ns, "inflate", 3, 2*time.Minute)
	pods := &corev1.PodList{}
	if err := kube.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName] = true
	}
	claims := &v1.NodeClaimList{}
	if err := kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	for _, n := range dovetailNodes(t) {
		if !used[n.Name] {
			t.Errorf("node %s runs none of the pods: a duplicate launch", n.Name)
		}
	}
	if len(claims.Items) != len(dovetailNodes(t)) {
		t.Errorf("%d NodeClaims for %d nodes", len(claims.Items), len(dovetailNodes(t)))
	}
	t.Logf("hand-over after SIGKILL of the leader: %v; %d NodeClaims for 3 pods", handover.Round(time.Millisecond), len(claims.Items))
}
