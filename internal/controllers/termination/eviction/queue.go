package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
)

const (
	// BaseDelay is the first retry delay of a pod whose eviction failed.
	BaseDelay = 100 * time.Millisecond
	// MaxDelay caps the retry delay of one pod.
	MaxDelay = 10 * time.Second
	// Workers is how many evictions run at once.
	Workers = 16

	// retryQPS and retryBurst bound retries across all pods, so that many
	// blocked pods cannot hammer the API server.
	retryQPS   = 100
	retryBurst = 1000

	// multiplePDBsMessage is the API server's 500 message for a pod that more
	// than one PodDisruptionBudget selects.
	multiplePDBsMessage = "more than one PodDisruptionBudget"
)

// Key identifies one pod to evict. The UID makes a replacement pod with the
// same name a different key.
type Key struct {
	types.NamespacedName
	UID types.UID
}

// KeyOf returns the key of a pod.
func KeyOf(pod *corev1.Pod) Key {
	return Key{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, UID: pod.UID}
}

// request is what the queue knows about a pending eviction.
type request struct {
	nodeName string
	nodeUID  types.UID
	reason   string
}

// Queue evicts pods in the background, retrying each with backoff until the
// API server accepts the eviction or the pod is gone. It is safe for
// concurrent use; Add may be called before Start.
type Queue struct {
	clock      clock.WithTicker
	kubeClient client.Client
	recorder   events.Recorder
	metrics    *metrics.Metrics

	mu      sync.Mutex
	pending map[Key]request
	queue   workqueue.TypedRateLimitingInterface[Key] // nil until Start
}

// NewQueue returns a queue that evicts through kubeClient. The clock drives
// the retry delays (tests pass a fake one); recorder and m receive the
// Evicted and FailedDraining events and the eviction metrics.
func NewQueue(clk clock.WithTicker, kubeClient client.Client, recorder events.Recorder, m *metrics.Metrics) *Queue {
	return &Queue{clock: clk, kubeClient: kubeClient, recorder: recorder, metrics: m, pending: map[Key]request{}}
}

// Name names the queue in logs.
func (q *Queue) Name() string { return "eviction" }

// Register adds the queue to the manager, which starts it after leader
// election and stops it on shutdown.
func (q *Queue) Register(_ context.Context, mgr manager.Manager) error {
	if err := mgr.Add(q); err != nil {
		return fmt.Errorf("adding the eviction queue to the manager: %w", err)
	}
	return nil
}

// NeedLeaderElection makes only the leader evict pods.
func (q *Queue) NeedLeaderElection() bool { return true }

// NewRateLimiter returns the per-pod retry policy: exponential backoff from
// BaseDelay to MaxDelay, and an overall bucket shared by all pods.
func NewRateLimiter() workqueue.TypedRateLimiter[Key] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Key](BaseDelay, MaxDelay),
		&workqueue.TypedBucketRateLimiter[Key]{Limiter: rate.NewLimiter(rate.Limit(retryQPS), retryBurst)},
	)
}

// Add asks the queue to evict pods from node, recording reason (why the node
// is being terminated) in the Evicted event and the pods_drained_total
// metric. Pods already pending are left as they are.
func (q *Queue) Add(node *corev1.Node, reason string, pods ...*corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, pod := range pods {
		key := KeyOf(pod)
		if _, ok := q.pending[key]; ok {
			continue
		}
		q.pending[key] = request{nodeName: node.Name, nodeUID: node.UID, reason: reason}
		if q.queue != nil {
			q.queue.Add(key)
		}
	}
}

// Start runs the eviction workers until ctx is done, then stops them and
// returns. A queue can be started once.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	if q.queue != nil {
		q.mu.Unlock()
		return errors.New("eviction queue started twice")
	}
	q.queue = workqueue.NewTypedRateLimitingQueueWithConfig(NewRateLimiter(), workqueue.TypedRateLimitingQueueConfig[Key]{
		Name: "eviction", Clock: q.clock,
	})
	for key := range q.pending {
		q.queue.Add(key)
	}
	q.mu.Unlock()
	// The operator's manager starts runnables with its logger in ctx.
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(q.Name()))

	var wg sync.WaitGroup
	for range Workers {
		wg.Go(func() {
			for q.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
	return nil
}

func (q *Queue) processNext(ctx context.Context) bool {
	key, shutdown := q.queue.Get()
	if shutdown {
		return false
	}
	defer q.queue.Done(key)
	q.mu.Lock()
	req, ok := q.pending[key]
	q.mu.Unlock()
	if !ok {
		q.queue.Forget(key)
		return true
	}
	if !q.evict(ctx, key, req) {
		q.queue.AddRateLimited(key)
		return true
	}
	q.queue.Forget(key)
	q.mu.Lock()
	delete(q.pending, key)
	q.mu.Unlock()
	return true
}

// evict makes one eviction request and reports whether the pod needs no more.
func (q *Queue) evict(ctx context.Context, key Key, req request) bool {
	logger := log.FromContext(ctx).WithValues("Pod", klog.KRef(key.Namespace, key.Name), "Node", klog.KRef("", req.nodeName))
	err := q.kubeClient.SubResource("eviction").Create(ctx,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		&policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(key.UID)}},
		})
	if code, ok := responseCode(err); ok {
		q.metrics.PodEvictionRequests.WithLabelValues(code).Inc()
	}
	switch {
	case err == nil:
		logger.V(1).Info("Evicted pod", "reason", req.reason)
		q.recorder.Publish(evictedEvent(key, req.reason))
		q.metrics.PodsDrained.WithLabelValues(req.reason).Inc()
		return true
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// 404: the pod is gone. 409: a different pod has the name now.
		return true
	case apierrors.IsTooManyRequests(err):
		q.recorder.Publish(blockedEvent(req.nodeName, req.nodeUID, key, describe(err)))
		logger.V(1).Info("Eviction refused, retrying", "reason", describe(err))
		return false
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), multiplePDBsMessage):
		q.recorder.Publish(blockedEvent(req.nodeName, req.nodeUID, key, "the pod is covered by more than one PodDisruptionBudget"))
		logger.V(1).Info("Eviction refused, retrying", "reason", err.Error())
		return false
	case ctx.Err() != nil:
		return false
	default:
		logger.Error(err, "Evicting pod")
		return false
	}
}

// responseCode returns the HTTP status of an eviction response, if there was one.
func responseCode(err error) (string, bool) {
	if err == nil {
		return "200", true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprint(status.Status().Code), true
	}
	return "", false
}

// describe returns the API server's explanation of a refused eviction,
// including the PDB's own message ("needs 2 healthy pods and has 2").
func describe(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	parts := []string{status.Status().Message}
	if details := status.Status().Details; details != nil {
		for _, cause := range details.Causes {
			parts = append(parts, cause.Message)
		}
	}
	return strings.Join(parts, " ")
}
