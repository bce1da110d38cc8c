package aws_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsprovider "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/settings"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// harness is a local AWS endpoint seeded for one cluster name and the AWS
// provider built against it and the test API server.
type harness struct {
	cluster string
	server  *localaws.Server
	rt      *awsprovider.Runtime
	clock   *testclock.FakeClock
}

// nopRecorder drops events.
type nopRecorder struct{}

func (nopRecorder) Publish(...events.Event) {}

// newHarness starts an endpoint for a cluster name of its own (so tests'
// instances, templates and profiles never mix) and builds the provider.
func newHarness(t *testing.T, cluster string) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clk := testclock.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	server, err := localaws.Start(ctx, localaws.Config{
		ClusterName: cluster, ClusterEndpoint: testEnv.ControlPlane.RESTConfig.Host,
		ClusterCA: testEnv.ControlPlane.RESTConfig.CAData, Clock: clk,
	})
	if err != nil {
		t.Fatalf("starting the local AWS endpoint: %v", err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	var s settings.Settings
	s.AddFlagsDefaults()
	s.ClusterName, s.Region, s.EndpointURL = cluster, server.Region(), server.URL()
	s.StaticAccessKeyID, s.StaticSecretAccessKey = localaws.AccessKeyID, localaws.SecretAccessKey
	rt, err := awsprovider.Build(ctx, awsprovider.Deps{
		Settings: s, KubeClient: testEnv.Client, RESTConfig: testEnv.ControlPlane.RESTConfig, Clock: clk, Recorder: nopRecorder{},
	})
	if err != nil {
		t.Fatalf("building the aws provider: %v", err)
	}
	return &harness{cluster: cluster, server: server, rt: rt, clock: clk}
}

// createClass creates the class and removes it (finalizer included) at cleanup.
func (h *harness) createClass(t *testing.T, nc *awsv1.EC2NodeClass) {
	t.Helper()
	if err := testEnv.Client.Create(context.Background(), nc); err != nil {
		t.Fatalf("creating ec2nodeclass %s: %v", nc.Name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		got := &awsv1.EC2NodeClass{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return
		}
		got.Finalizers = nil
		_ = testEnv.Client.Update(ctx, got)
		_ = testEnv.Client.Delete(ctx, got)
	})
}

// reconcile runs the class controller once and returns the stored class
// (nil once it is gone).
func (h *harness) reconcile(t *testing.T, name string) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	nc := &awsv1.EC2NodeClass{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	if _, err := h.rt.NodeClasses.Reconcile(ctx, nc); err != nil {
		t.Logf("reconciling ec2nodeclass %s: %v", name, err)
	}
	out := &awsv1.EC2NodeClass{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, out); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return out
}

// defaultClass is the v1 document's class for the harness's cluster, named name.
func (h *harness) defaultClass(name string) *awsv1.EC2NodeClass {
	nc := localcluster.DefaultEC2NodeClass(h.cluster)
	nc.Name = name
	return nc
}

// condition returns the class's condition of the given type, failing if absent.
func condition(t *testing.T, nc *awsv1.EC2NodeClass, conditionType string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(nc.Status.Conditions, conditionType)
	if c == nil {
		t.Fatalf("ec2nodeclass %s has no %s condition: %+v", nc.Name, conditionType, nc.Status.Conditions)
	}
	return *c
}

// requireFalseNaming checks that a condition is False and its message names field.
func requireFalseNaming(t *testing.T, nc *awsv1.EC2NodeClass, conditionType, field string) {
	t.Helper()
	c := condition(t, nc, conditionType)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, field) {
		t.Fatalf("%s = %s (%s: %q), want False naming %s", conditionType, c.Status, c.Reason, c.Message, field)
	}
	if n := strings.Count(c.Message, field+" is not valid"); n > 1 {
		t.Fatalf("%s message says the same thing %d times: %q", conditionType, n, c.Message)
	}
	if ready := condition(t, nc, awsv1.ConditionTypeReady); ready.Status != metav1.ConditionFalse {
		t.Fatalf("Ready = %s while %s is False", ready.Status, conditionType)
	}
}
