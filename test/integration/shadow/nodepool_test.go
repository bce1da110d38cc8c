package shadow_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// liveHarness is a live provisioner and disruption loop (no --dry-run)
// fed by real informers, with a fake cloud provider; tests call
// Reconcile themselves.
type liveHarness struct {
	ctx         context.Context
	cp          *fake.CloudProvider
	registry    *prometheus.Registry
	recorder    *env.EventLog
	cluster     *state.Cluster
	cached      client.Client
	provisioner *provisioning.Provisioner
	loop        *disrupter.Controller
}

func newLiveHarness(t *testing.T) *liveHarness {
	t.Helper()
	h := &liveHarness{
		ctx: log.IntoContext(context.Background(), testlog.Logger(t, 1)),
		cp:  fake.NewCloudProvider(), registry: prometheus.NewRegistry(), recorder: &env.EventLog{},
		cluster: state.NewCluster(clock.RealClock{}).WithAPIReader(testEnv.Client),
	}
	h.cp.InstanceTypes = dtesting.SmallMediumLarge(false)
	m, err := metrics.New(h.registry)
	if err != nil {
		t.Fatal(err)
	}
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(h.cluster) {
			if err := c.Register(h.ctx, mgr); err != nil {
				return err
			}
		}
		return nil
	})
	h.cached = mgr.GetClient()
	h.provisioner = provisioning.NewProvisioner(clock.RealClock{}, h.cached, h.cluster, h.cp, h.recorder, m,
		provisioning.Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second})
	opts := disrupter.DefaultOptions()
	opts.ValidationDelay = 0
	h.loop, _ = disrupter.NewController(clock.RealClock{}, h.cached, h.cluster, h.cp, h.recorder, m, opts)
	return h
}

// settle waits until the model is synced and holds the nodes, each with
// its number of pods.
func (h *liveHarness) settle(t *testing.T, pods map[string]int) {
	t.Helper()
	env.Eventually(t, 30*time.Second, "the model to hold the nodes and their pods", func(ctx context.Context) (bool, error) {
		if synced, err := h.cluster.Synced(ctx, h.cached); !synced || err != nil {
			return false, err
		}
		seen := 0
		for _, n := range h.cluster.Nodes() {
			if want, ok := pods[n.Name()]; ok {
				if len(n.Pods) != want || n.NodeClaim == nil {
					return false, nil
				}
				seen++
			}
		}
		return seen == len(pods), nil
	})
}

// TestShadowNodePoolProvisioning: a pending pod fits every NodePool and
// the shadow ones weigh more (the heaviest is annotated with a mistyped
// value, which fails safe: shadow-only, with a warning). The live
// controller launches a NodeClaim of the live pool for it and publishes,
// without launching, the NodeClaim the heaviest shadow pool would have
// launched.
func TestShadowNodePoolProvisioning(t *testing.T) {
	testEnv.RemoveClusterScoped(t)
	ns := testEnv.Namespace(t)
	live := pool(t, "live", 0, nil)
	rehearsal := pool(t, "rehearsal", 10, map[string]string{shadow.AnnotationKey: "true"})
	// A mistyped value fails safe: shadow-only, with a warning.
	mistyped := pool(t, "mistyped", 20, map[string]string{shadow.AnnotationKey: "yes"})
	pod := pendingPod(t, ns, "web", "1", nil)
	h := newLiveHarness(t)
	h.settle(t, nil)
	if err := h.provisioner.Reconcile(h.ctx); err != nil {
		t.Fatalf("provisioning: %v", err)
	}

	claims := &v1.NodeClaimList{}
	if err := testEnv.Client.List(h.ctx, claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 || claims.Items[0].Labels[v1.NodePoolLabelKey] != live.Name {
		var got []string
		for _, nc := range claims.Items {
			got = append(got, nc.Name+" of "+nc.Labels[v1.NodePoolLabelKey])
		}
		t.Fatalf("NodeClaims created: %v, want one of NodePool %s", got, live.Name)
	}
	h.recorder.Expect(t, "Nominated", pod.Name, "nodeclaim/"+claims.Items[0].Name)
	h.recorder.Expect(t, shadow.ReasonInvalidAnnotation, mistyped.Name, `dovetail.dev/shadow="yes" is not "true" or "false"`)
	h.recorder.Expect(t, shadow.ReasonLaunch, mistyped.Name, "Would launch a NodeClaim: small on-demand")
	h.recorder.Expect(t, shadow.ReasonNominated, pod.Name, "a new NodeClaim of NodePool mistyped")
	if got := h.recorder.Messages(shadow.ReasonLaunch, live.Name); len(got) > 0 {
		t.Errorf("live NodePool got ShadowLaunch events: %q", got)
	}
	if n, _ := gauge(t, h.registry, "dovetail_shadow_nodeclaims", map[string]string{"nodepool": mistyped.Name, "instance_type": "small"}); n != 1 {
		t.Errorf("dovetail_shadow_nodeclaims{nodepool=mistyped} = %v, want 1", n)
	}
	if n, ok := gauge(t, h.registry, "dovetail_shadow_nodeclaims", map[string]string{"nodepool": rehearsal.Name}); ok {
		t.Errorf("dovetail_shadow_nodeclaims{nodepool=rehearsal} = %v, want no series (the heavier shadow pool takes the pod)", n)
	}
	if n, ok := gauge(t, h.registry, "dovetail_shadow_nodeclaims", map[string]string{"nodepool": live.Name}); ok {
		t.Errorf("dovetail_shadow_nodeclaims{nodepool=live} = %v, want no series", n)
	}
	if p, _ := gauge(t, h.registry, "dovetail_shadow_launch_price_per_hour", map[string]string{"nodepool": mistyped.Name}); !near(p, 0.1) {
		t.Errorf("dovetail_shadow_launch_price_per_hour{nodepool=mistyped} = %v, want 0.1", p)
	}
}

// TestShadowNodePoolDisruption: two under-used large nodes, one per
// NodePool, each could go (its pod fits on the other). The live loop
// disrupts the live pool's node; the shadow pool's node is published as
// what would be disrupted and is left untouched.
func TestShadowNodePoolDisruption(t *testing.T) {
	testEnv.RemoveClusterScoped(t)
	ns := testEnv.Namespace(t)
	h := newLiveHarness(t)
	live := pool(t, "live", 0, nil)
	rehearsal := pool(t, "rehearsal", 0, map[string]string{shadow.AnnotationKey: "true"})
	liveClaim, liveNode := node(t, h.cp, "live-large", live, "large", fake.Zone1)
	shadowClaim, shadowNode := node(t, h.cp, "rehearsal-large", rehearsal, "large", fake.Zone1)
	boundPod(t, ns, "a", liveNode.Name, "500m")
	boundPod(t, ns, "b", shadowNode.Name, "500m")
	h.settle(t, map[string]int{liveNode.Name: 1, shadowNode.Name: 1})
	env.Get(h.ctx, t, testEnv.Client, shadowNode)
	env.Get(h.ctx, t, testEnv.Client, shadowClaim)
	shadowVersions := [2]string{shadowNode.ResourceVersion, shadowClaim.ResourceVersion}

	if _, err := h.loop.Reconcile(h.ctx); err != nil {
		t.Fatalf("disruption pass: %v", err)
	}

	// The shadow pool's node: published, untouched.
	h.recorder.Expect(t, shadow.ReasonDisrupt, shadowNode.Name, "Would disrupt: Underutilized")
	if n, _ := gauge(t, h.registry, "dovetail_shadow_disrupted_nodes", map[string]string{"nodepool": rehearsal.Name, "reason": "underutilized"}); n != 1 {
		t.Errorf("dovetail_shadow_disrupted_nodes{nodepool=rehearsal} = %v, want 1", n)
	}
	env.Get(h.ctx, t, testEnv.Client, shadowNode)
	env.Get(h.ctx, t, testEnv.Client, shadowClaim)
	if got := [2]string{shadowNode.ResourceVersion, shadowClaim.ResourceVersion}; got != shadowVersions {
		t.Errorf("the shadow NodePool's node or claim changed: %v, want %v (taints %v, deleting %v)", got, shadowVersions,
			shadowNode.Spec.Taints, shadowClaim.DeletionTimestamp)
	}
	// The live pool's node: disrupted (tainted, or already being deleted).
	env.Get(h.ctx, t, testEnv.Client, liveNode)
	env.Get(h.ctx, t, testEnv.Client, liveClaim)
	tainted := false
	for _, taint := range liveNode.Spec.Taints {
		tainted = tainted || taint.Key == v1.DisruptedTaintKey
	}
	if !tainted && liveClaim.DeletionTimestamp == nil {
		t.Errorf("the live NodePool's node was not disrupted: taints %v, claim deleting %v", liveNode.Spec.Taints, liveClaim.DeletionTimestamp)
	}
	if got := h.recorder.Messages(shadow.ReasonDisrupt, liveNode.Name); len(got) > 0 {
		t.Errorf("the live node got ShadowDisrupt events: %q", got)
	}
	if n, ok := gauge(t, h.registry, "dovetail_shadow_disrupted_nodes", map[string]string{"nodepool": live.Name}); ok {
		t.Errorf("dovetail_shadow_disrupted_nodes{nodepool=live} = %v, want no series", n)
	}
}
