package interruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/interruption"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/unavailable"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	localsqs "github.com/dovetail-autoscaler/dovetail/internal/localaws/sqs"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
)

const (
	testLabel = "interruption.dovetail.test/namespace"
	nodePool  = "default"
	zone      = "us-east-1a"
	waitFor   = 30 * time.Second
)

// harness runs one interruption controller in a manager against its own
// local AWS endpoint, whose interruption queue is the controller's.
type harness struct {
	t           *testing.T
	clock       clock.Clock
	ctx         context.Context
	ns          string
	aws         *localaws.Server
	events      *env.EventLog
	offerings   *unavailable.Cache
	registry    *prometheus.Registry
	core        *metrics.Metrics
	cached      client.Client
	queue       string
	envelopeSeq int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), testlog.Logger(t, 1)))
	t.Cleanup(cancel)
	clk := clock.RealClock{}
	srv, err := localaws.Start(ctx, localaws.Config{ClusterName: "interruption", Clock: clk})
	if err != nil {
		t.Fatalf("starting the local AWS endpoint: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	cfg, err := srv.AWSConfig(ctx)
	if err != nil {
		t.Fatalf("building the AWS config: %v", err)
	}
	h := &harness{t: t, clock: clk, ctx: ctx, ns: testEnv.Namespace(t), aws: srv, events: &env.EventLog{},
		offerings: unavailable.New(clk), registry: prometheus.NewRegistry(), queue: "interruption"}
	if h.core, err = metrics.New(h.registry); err != nil {
		t.Fatalf("creating the core metrics: %v", err)
	}
	mgr := testEnv.StartManager(t, func(mgr manager.Manager) error {
		ctrl := interruption.NewController(mgr.GetClient(), clk, sqs.NewFromConfig(cfg), h.queue, interruption.Options{
			Recorder: h.events, MarkUnavailable: h.offerings.MarkUnavailable, Registerer: h.registry,
			NodeClaimsDisrupted: h.core.NodeClaimsDisrupted, ErrorBackoff: 100 * time.Millisecond,
		})
		return ctrl.Register(ctx, loggingManager{Manager: mgr, logger: log.FromContext(ctx)})
	})
	h.cached = mgr.GetClient()
	t.Cleanup(h.removeFinalizers)
	return h
}

// loggingManager hands runnables the test's logger through their context.
type loggingManager struct {
	manager.Manager
	logger logr.Logger
}

func (m loggingManager) Add(r manager.Runnable) error {
	return m.Manager.Add(loggingRunnable{Runnable: r, logger: m.logger})
}

// loggingRunnable keeps the wrapped runnable's leader-election need.
type loggingRunnable struct {
	manager.Runnable
	logger logr.Logger
}

func (r loggingRunnable) Start(ctx context.Context) error {
	return r.Runnable.Start(log.IntoContext(ctx, r.logger))
}

func (r loggingRunnable) NeedLeaderElection() bool {
	le, ok := r.Runnable.(manager.LeaderElectionRunnable)
	return !ok || le.NeedLeaderElection()
}

// instance is a launched NodeClaim with its registered Node.
type instance struct {
	id    string
	claim *v1.NodeClaim
	node  *corev1.Node
}

// launch creates a spot NodeClaim for the instance with its provider ID and
// labels, and its Node, both with the termination finalizer, and waits for
// the controller's cache to see them.
func (h *harness) launch(name, instanceType string) instance {
	h.t.Helper()
	id := fmt.Sprintf("i-%s%s", h.ns[len(h.ns)-5:], name)
	providerID := "aws:///" + zone + "/" + id
	gvk := fake.NodeClassGVK()
	labels := map[string]string{testLabel: h.ns, v1.NodePoolLabelKey: nodePool,
		corev1.LabelInstanceTypeStable: instanceType, corev1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: h.ns + "-" + name, Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: gvk.Group, Kind: gvk.Kind, Name: "default"},
		}},
	}
	if err := testEnv.Client.Create(h.ctx, nc); err != nil {
		h.t.Fatalf("creating NodeClaim: %v", err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID, nc.Name
	if err := testEnv.Client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("setting NodeClaim status: %v", err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := testEnv.Client.Create(h.ctx, node); err != nil {
		h.t.Fatalf("creating Node: %v", err)
	}
	env.Eventually(h.t, waitFor, "the cache to see "+nc.Name, func(ctx context.Context) (bool, error) {
		c, n := &v1.NodeClaim{}, &corev1.Node{}
		if err := h.cached.Get(ctx, client.ObjectKeyFromObject(nc), c); err != nil {
			return false, err
		}
		if err := h.cached.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return false, err
		}
		return c.Status.ProviderID == providerID, nil
	})
	return instance{id: id, claim: nc, node: node}
}

// removeFinalizers lets the test's NodeClaims and Nodes go.
func (h *harness) removeFinalizers() {
	ctx := context.Background()
	claims := &v1.NodeClaimList{}
	nodes := &corev1.NodeList{}
	_ = testEnv.Client.List(ctx, claims, client.MatchingLabels{testLabel: h.ns})
	_ = testEnv.Client.List(ctx, nodes, client.MatchingLabels{testLabel: h.ns})
	var objs []client.Object
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	for _, o := range objs {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		o.SetFinalizers(nil)
		_ = testEnv.Client.Patch(ctx, o, patch)
		_ = testEnv.Client.Delete(ctx, o)
	}
}

// envelope is a new EventBridge envelope.
func (h *harness) envelope() localsqs.Envelope {
	h.envelopeSeq++
	return localsqs.Envelope{ID: fmt.Sprintf("%s-%d", h.ns, h.envelopeSeq), Account: h.aws.AccountID(),
		Region: h.aws.Region(), Time: h.clock.Now()}
}

// send puts a raw body on the interruption queue.
func (h *harness) send(body string) {
	h.t.Helper()
	if _, err := h.aws.SQS().Send(h.queue, body); err != nil {
		h.t.Fatalf("sending to the interruption queue: %v", err)
	}
}

// waitDrained waits until the queue holds no message, visible or in flight.
func (h *harness) waitDrained() {
	h.t.Helper()
	env.Eventually(h.t, waitFor, "the interruption queue to be empty", func(context.Context) (bool, error) {
		d, ok := h.aws.SQS().Depth(h.queue)
		if !ok {
			return false, fmt.Errorf("queue %s does not exist", h.queue)
		}
		return d.Visible+d.InFlight+d.Delayed == 0, nil
	})
}

// waitDeleted waits until the metric of deleted messages reaches n.
func (h *harness) waitDeleted(n float64) {
	h.t.Helper()
	env.Eventually(h.t, waitFor, fmt.Sprintf("%v deleted messages", n), func(context.Context) (bool, error) {
		return h.metric("karpenter_interruption_deleted_messages_total", nil) >= n, nil
	})
}

// deleting reports whether the NodeClaim has a deletion timestamp.
func (h *harness) deleting(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	got := &v1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		return false, err
	}
	return !got.DeletionTimestamp.IsZero(), nil
}

func (h *harness) waitDeleting(nc *v1.NodeClaim) {
	h.t.Helper()
	env.Eventually(h.t, waitFor, "NodeClaim "+nc.Name+" to be deleting", func(ctx context.Context) (bool, error) {
		return h.deleting(ctx, nc)
	})
}

// metric sums the samples of a counter or histogram (its count) whose
// labels include want.
func (h *harness) metric(name string, want map[string]string) float64 {
	h.t.Helper()
	families, err := h.registry.Gather()
	if err != nil {
		h.t.Fatalf("gathering metrics: %v", err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
