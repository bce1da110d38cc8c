package shadow_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

// TestDryRunController runs the whole `dovetail controller --dry-run`
// composition (operator, kwok provider, every controller it keeps) on the
// API server with a pending pod: the plan reaches the API server as a
// ShadowLaunch Event on the NodePool and as dovetail_shadow_* metrics on
// the operator's registry, the conversion webhook is not served, and no
// NodeClaim or Node is created and the pod and NodePool stay as they were.
func TestDryRunController(t *testing.T) {
	testEnv.RemoveClusterScoped(t)
	ns := testEnv.Namespace(t)
	kwokNodeClass(t, "default")
	np := testEnv.CreateReadyNodePool(t, whatiftest.NodePool("default", "default", 0, "30s"))
	pod := pendingPod(t, ns, "web", "1", nil)
	before := versions(t)

	opts := localcluster.OperatorOptions()
	opts.DryRun = true
	opts.LogWriter = io.Discard
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, opts, testEnv.ControlPlane.RESTConfig)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if op.Webhook != nil {
		t.Error("the conversion webhook is served in dry-run")
	}
	done := make(chan error, 1)
	go func() { done <- compose.RunWithKwok(ctx, op, compose.KwokOptions{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller stopped with error: %v", err)
		}
	})

	var message string
	env.Eventually(t, time.Minute, "a ShadowLaunch event on the NodePool", func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		if err := testEnv.Client.List(ctx, list); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == shadow.ReasonLaunch && e.InvolvedObject.Kind == "NodePool" && e.InvolvedObject.Name == np.Name {
				message = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if n, _ := gauge(t, op.Registry, "dovetail_shadow_nodeclaims", map[string]string{"nodepool": np.Name, "capacity_type": "on-demand"}); n != 1 {
		t.Errorf("dovetail_shadow_nodeclaims{nodepool=default} = %v, want 1 (event %q)", n, message)
	}
	if p, _ := gauge(t, op.Registry, "dovetail_shadow_launch_price_per_hour", map[string]string{"nodepool": np.Name}); p <= 0 {
		t.Errorf("dovetail_shadow_launch_price_per_hour{nodepool=default} = %v, want a price", p)
	}
	if diff := cmp.Diff(before, versions(t)); diff != "" {
		t.Errorf("dry run changed objects (-before +after):\n%s", diff)
	}
	env.Get(context.Background(), t, testEnv.Client, pod)
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" {
		t.Errorf("dry run placed or nominated the pod: node %q, nominated %q", pod.Spec.NodeName, pod.Status.NominatedNodeName)
	}
}
