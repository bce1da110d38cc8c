package localaws_test

import (
	"context"
	"slices"
	"testing"
	"time"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestNodeRegistersAfterTheBootDelay launches an instance on an endpoint
// with a boot delay: once it runs, the bridge waits for the delay (the
// instance is Booting and has no Node), and the Node registers only after
// the clock passed StateChangeTime + BootDelay.
func TestNodeRegistersAfterTheBootDelay(t *testing.T) {
	const bootDelay = 45 * time.Second
	e := startEndpointWith(t, localaws.Config{BootDelay: bootDelay})
	id := e.launch(t, "karpenter.k8s.aws/boot-delay", al2023UserData(cluster, testEnv.ControlPlane.RESTConfig.Host))
	e.boot()
	inst, _ := e.server.EC2().Instance(id)
	if inst.State != ec2.StateRunning {
		t.Fatalf("instance %s is %s after the pending delay", id, inst.State)
	}
	key := client.ObjectKey{Name: inst.PrivateDNSName}
	env.Eventually(t, 30*time.Second, "instance "+id+" waits for its boot delay", func(context.Context) (bool, error) {
		return slices.Contains(e.server.Nodes().Booting(), id), nil
	})
	assertNoNode := func(when string) {
		t.Helper()
		if err := testEnv.Client.Get(context.Background(), key, &corev1.Node{}); !apierrors.IsNotFound(err) {
			t.Fatalf("node %s %s: Get = %v, want NotFound", key.Name, when, err)
		}
	}
	assertNoNode("before the boot delay")

	// One second short of the delay: still booting, still no Node.
	e.clock.SetTime(inst.StateChangeTime.Add(bootDelay - time.Second))
	if !slices.Contains(e.server.Nodes().Booting(), id) {
		t.Errorf("instance %s stopped booting a second before its boot delay passed", id)
	}
	assertNoNode("a second before the boot delay passed")

	e.clock.SetTime(inst.StateChangeTime.Add(bootDelay))
	env.Eventually(t, 30*time.Second, "node "+key.Name+" registers after the boot delay", func(ctx context.Context) (bool, error) {
		return testEnv.Client.Get(ctx, key, &corev1.Node{}) == nil, nil
	})
	if booting := e.server.Nodes().Booting(); len(booting) != 0 {
		t.Errorf("Booting = %v after the Node registered, want none", booting)
	}

	// The other tests launch into the same addresses: leave no Node behind.
	if _, err := e.ec2.TerminateInstances(context.Background(), &awsec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatalf("TerminateInstances: %v", err)
	}
	env.Eventually(t, 30*time.Second, "node "+key.Name+" is deleted", func(ctx context.Context) (bool, error) {
		return !env.Exists(ctx, t, testEnv.Client, &corev1.Node{ObjectMeta: metaName(key.Name)}), nil
	})
}
