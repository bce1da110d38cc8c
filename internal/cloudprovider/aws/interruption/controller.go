package interruption

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Polling parameters, as Karpenter's.
const (
	// MaxMessages is how many messages one ReceiveMessage asks for, and how
	// many are handled in parallel.
	MaxMessages = 10
	// WaitTimeSeconds is the long-polling wait.
	WaitTimeSeconds = 20
	// VisibilityTimeoutSeconds hides a received message from other receives;
	// a message whose handling failed reappears after it.
	VisibilityTimeoutSeconds = 20
	// DefaultErrorBackoff is how long the loop waits after a failed
	// GetQueueUrl or ReceiveMessage.
	DefaultErrorBackoff = 5 * time.Second
)

// Options are the controller's optional collaborators.
type Options struct {
	// Recorder publishes events on Nodes and NodeClaims; nil publishes none.
	Recorder events.Recorder
	// MarkUnavailable marks an offering unavailable for a while (the
	// unavailable-offerings cache's MarkUnavailable); nil skips it.
	MarkUnavailable func(instanceType, zone, capacityType, reason string)
	// MarkReservationUnavailable records that a capacity reservation takes
	// no more instances for now (capacityreservation.Provider's
	// MarkUnavailable); nil skips it.
	MarkReservationUnavailable func(reservationID string)
	// Registerer receives the interruption metrics; nil skips registration.
	Registerer prometheus.Registerer
	// NodeClaimsDisrupted is the core's karpenter_nodeclaims_disrupted_total
	// (labels reason, nodepool); nil skips it.
	NodeClaimsDisrupted *prometheus.CounterVec
	// ErrorBackoff is the wait after a failed queue call (DefaultErrorBackoff when zero).
	ErrorBackoff time.Duration
}

// Controller polls the interruption queue and acts on its messages. It runs
// on the leader only.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
	sqs        sdk.SQS
	queueName  string
	opts       Options
	metrics    *metrics
}

// NewController returns the interruption controller for the named queue.
func NewController(kubeClient client.Client, clk clock.Clock, sqsAPI sdk.SQS, queueName string, opts Options) *Controller {
	if opts.ErrorBackoff <= 0 {
		opts.ErrorBackoff = DefaultErrorBackoff
	}
	return &Controller{kubeClient: kubeClient, clock: clk, sqs: sqsAPI, queueName: queueName, opts: opts, metrics: newMetrics()}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "aws.interruption" }

// Register registers the metrics and adds the polling loop to the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := c.metrics.register(c.opts.Registerer); err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding %s to the manager: %w", c.Name(), err)
	}
	return nil
}

// NeedLeaderElection runs the loop on the leader only: one consumer acts
// on each message.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls the queue until ctx ends. Queue errors are logged and retried
// after Options.ErrorBackoff; a queue that disappears is looked up again.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(c.Name()).WithValues("queue", c.queueName)
	ctx = log.IntoContext(ctx, logger)
	logger.Info("Starting interruption handling")
	var url string
	for ctx.Err() == nil {
		if url == "" {
			u, err := c.queueURL(ctx)
			if err != nil {
				if ctx.Err() == nil {
					logger.Error(err, "Resolving the interruption queue")
					c.wait(ctx)
				}
				continue
			}
			url = u
			logger.V(1).Info("Resolved the interruption queue", "url", url)
		}
		msgs, err := c.receive(ctx, url)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			logger.Error(err, "Receiving interruption messages")
			var missing *sqstypes.QueueDoesNotExist
			if errors.As(err, &missing) {
				url = ""
			}
			c.wait(ctx)
			continue
		}
		workqueue.ParallelizeUntil(ctx, MaxMessages, len(msgs), func(i int) { c.process(ctx, url, msgs[i]) })
	}
	logger.Info("Stopped interruption handling")
	return nil
}

// wait blocks for the error backoff or until ctx ends.
func (c *Controller) wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-c.clock.After(c.opts.ErrorBackoff):
	}
}

func (c *Controller) queueURL(ctx context.Context) (string, error) {
	out, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.queueName)})
	if err != nil {
		return "", fmt.Errorf("getting the URL of queue %s: %w", c.queueName, err)
	}
	if aws.ToString(out.QueueUrl) == "" {
		return "", fmt.Errorf("getting the URL of queue %s: empty URL", c.queueName)
	}
	return aws.ToString(out.QueueUrl), nil
}

func (c *Controller) receive(ctx context.Context, url string) ([]sqstypes.Message, error) {
	out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         MaxMessages,
		WaitTimeSeconds:             WaitTimeSeconds,
		VisibilityTimeout:           VisibilityTimeoutSeconds,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, fmt.Errorf("receiving from queue %s: %w", c.queueName, err)
	}
	return out.Messages, nil
}

// process parses, handles and deletes one message. A malformed or no-op
// message is deleted at once; one whose handling failed stays on the queue
// and is received again after the visibility timeout.
func (c *Controller) process(ctx context.Context, url string, m sqstypes.Message) {
	logger := log.FromContext(ctx).WithValues("messageID", aws.ToString(m.MessageId))
	ctx = log.IntoContext(ctx, logger)
	msg, err := Parse(aws.ToString(m.Body))
	if err != nil {
		c.metrics.received.WithLabelValues(MessageTypeMalformed).Inc()
		logger.Error(err, "Dropping an unparseable interruption message")
	} else {
		c.metrics.received.WithLabelValues(string(msg.Kind)).Inc()
		logger = logger.WithValues("kind", msg.Kind, "eventID", msg.ID, "instances", msg.InstanceIDs)
		ctx = log.IntoContext(ctx, logger)
		if msg.Kind == KindNoOp {
			logger.V(1).Info("Ignoring an interruption message", "source", msg.Source, "detailType", msg.DetailType)
		} else if err := c.handle(ctx, msg); err != nil {
			logger.Error(err, "Handling an interruption message; it will be received again")
			return
		}
	}
	if sent, ok := sentTimestamp(m); ok {
		c.metrics.queueDuration.Observe(c.clock.Since(sent).Seconds())
	}
	if _, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		logger.Error(err, "Deleting an interruption message; it will be received again")
		return
	}
	c.metrics.deleted.Inc()
}

// sentTimestamp reads the SentTimestamp system attribute (epoch milliseconds).
func sentTimestamp(m sqstypes.Message) (time.Time, bool) {
	raw, ok := m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)]
	if !ok {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}
