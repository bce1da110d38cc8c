package shadow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

// TestDryRunPublishesDecisionsAndWritesNothing composes the controllers
// as `dovetail controller --dry-run` does and runs them on a manager, with
// a pending pod only a new node can take (it asks for the zone no node is
// in) and an under-used large node (one half-cpu pod on 8 cpu). The shadow
// controller plans a small node in the other zone for the pod and would
// replace the large node with a small one, and says so in events and
// metrics, but no NodeClaim is created, nothing is launched, tainted or
// deleted, and no pod, Node, NodeClaim or NodePool changes.
func TestDryRunPublishesDecisionsAndWritesNothing(t *testing.T) {
	testEnv.RemoveClusterScoped(t)
	ns := testEnv.Namespace(t)
	cp := fake.NewCloudProvider()
	cp.InstanceTypes = dtesting.SmallMediumLarge(false)
	np := pool(t, "default", 0, nil)
	_, large := node(t, cp, "shadow-large", np, "large", fake.Zone1)
	boundPod(t, ns, "resident", large.Name, "500m")
	pending := pendingPod(t, ns, "waiting", "1", map[string]string{corev1.LabelTopologyZone: fake.Zone2})
	launchesBefore := len(cp.CreateCalls)
	before := versions(t)

	registry := prometheus.NewRegistry()
	m, err := metrics.New(registry)
	if err != nil {
		t.Fatal(err)
	}
	recorder := &env.EventLog{}
	ctx := log.IntoContext(context.Background(), testlog.Logger(t, 1))
	opts := controllers.Options{
		DryRun:       true,
		Provisioning: provisioning.Options{BatchIdleDuration: 100 * time.Millisecond, BatchMaxDuration: time.Second},
		Disruption:   disrupter.DefaultOptions(),
		NodeRepair:   true,
	}
	opts.Disruption.PollPeriod = time.Second
	testEnv.StartManager(t, func(mgr manager.Manager) error {
		return controllers.Register(ctx, mgr, controllers.NewControllers(controllers.Dependencies{
			Clock: clock.RealClock{}, KubeClient: mgr.GetClient(), Cluster: state.NewCluster(clock.RealClock{}).WithAPIReader(testEnv.Client),
			CloudProvider: cp, Recorder: recorder, Metrics: m,
		}, opts))
	})

	t.Cleanup(func() {
		if t.Failed() {
			dump(t, registry, recorder, []string{np.Name, large.Name, pending.Name, "resident"})
		}
	})
	// 1. The decisions are published.
	env.Eventually(t, 20*time.Second, "the shadow launch and disruption to be published", func(context.Context) (bool, error) {
		launched, _ := gauge(t, registry, "dovetail_shadow_nodeclaims", map[string]string{"nodepool": "default", "instance_type": "small", "capacity_type": "on-demand"})
		disrupted, _ := gauge(t, registry, "dovetail_shadow_disrupted_nodes", map[string]string{"nodepool": "default", "reason": "underutilized"})
		return launched == 1 && disrupted == 1 && len(recorder.Messages(shadow.ReasonDisrupt, large.Name)) > 0, nil
	})
	recorder.Expect(t, shadow.ReasonLaunch, np.Name, "Would launch a NodeClaim: small on-demand in "+fake.Zone2+" at $0.1000/h")
	recorder.Expect(t, shadow.ReasonNominated, pending.Name, "Would schedule pod on a new NodeClaim of NodePool default (small on-demand in "+fake.Zone2)
	recorder.Expect(t, shadow.ReasonDisrupt, large.Name, "Underutilized")
	recorder.Expect(t, shadow.ReasonDisrupt, "shadow-large", "Would disrupt")
	for name, want := range map[string]struct {
		labels map[string]string
		value  float64
	}{
		"dovetail_shadow_launch_price_per_hour":       {map[string]string{"nodepool": "default"}, 0.1},
		"dovetail_shadow_pods":                        {map[string]string{"nodepool": "default", "target": "new"}, 1},
		"dovetail_shadow_unschedulable_pods":          {nil, 0},
		"dovetail_shadow_disruption_savings_per_hour": {map[string]string{"reason": "underutilized"}, 0.3},
	} {
		got, ok := gauge(t, registry, name, want.labels)
		if !ok || !near(got, want.value) {
			t.Errorf("%s%v = %v (present %v), want %v", name, want.labels, got, ok, want.value)
		}
	}
	decision, _ := gauge(t, registry, "dovetail_shadow_disrupted_nodes", map[string]string{"nodepool": "default"})
	if decision != 1 {
		t.Errorf("dovetail_shadow_disrupted_nodes{nodepool=default} = %v, want 1", decision)
	}
	for _, controller := range []string{"provisioner", "disruption"} {
		if n, _ := gauge(t, registry, "dovetail_shadow_decisions_total", map[string]string{"controller": controller}); n < 1 {
			t.Errorf("dovetail_shadow_decisions_total{controller=%s} = %v, want at least 1", controller, n)
		}
	}

	// 2. Nothing was written: no NodeClaim, no launch, no taint, no
	// deletion, no change to any pod, Node, NodeClaim or NodePool.
	if diff := cmp.Diff(before, versions(t)); diff != "" {
		t.Errorf("shadow mode changed objects (-before +after):\n%s", diff)
	}
	cp.Lock()
	launches, deletes := len(cp.CreateCalls)-launchesBefore, len(cp.DeleteCalls)
	cp.Unlock()
	if launches != 0 || deletes != 0 {
		t.Errorf("shadow mode called the cloud provider: %d launches, %d deletes", launches, deletes)
	}
	env.Get(context.Background(), t, testEnv.Client, large)
	for _, taint := range large.Spec.Taints {
		if taint.Key == v1.DisruptedTaintKey {
			t.Errorf("shadow mode tainted %s: %v", large.Name, taint)
		}
	}
	for _, reason := range []string{"Nominated", "DisruptionLaunching", "DisruptionTerminating"} {
		for _, name := range []string{pending.Name, large.Name, np.Name} {
			if got := recorder.Messages(reason, name); len(got) > 0 {
				t.Errorf("shadow mode published the live %s event for %s: %q", reason, name, got)
			}
		}
	}
	if got := recorder.Messages(shadow.ReasonLaunch, np.Name); len(got) > 0 && !strings.Contains(got[0], ns+"/waiting") {
		t.Errorf("ShadowLaunch event does not name the pod: %q", got)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
