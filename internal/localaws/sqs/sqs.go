package sqs

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/awsjson"
)

// targetPrefix is the X-Amz-Target prefix of SQS's awsJson1_0 protocol.
const targetPrefix = "AmazonSQS"

// Config configures a Service.
type Config struct {
	// Region is the region the service answers for (default us-east-1).
	Region string
	// AccountID owns the queues (default 123456789012).
	AccountID string
	// QueueURLBase is the scheme and host queue URLs start with (default
	// https://sqs.<region>.amazonaws.com). Requests are routed by the URL's
	// /<account>/<name> path, whatever its host.
	QueueURLBase string
	// Clock drives timestamps, visibility timeouts, delays, retention and
	// long polling (default the real clock).
	Clock clock.Clock
	// Seed fixes which requests SetThrottle's rate refuses.
	Seed uint64
}

// Service is a local SQS with standard queues. It implements http.Handler.
type Service struct {
	region, account, urlBase string
	clock                    clock.Clock
	throttle                 *awsjson.Throttle

	mu      sync.Mutex
	seq     uint64
	queues  map[string]*queue
	changed chan struct{} // closed and replaced whenever a message is sent
}

// queue is one standard queue.
type queue struct {
	name       string
	attributes map[string]string // as created, defaults filled in
	visibility time.Duration
	retention  time.Duration
	wait       time.Duration
	delay      time.Duration
	maxSize    int
	created    time.Time
	messages   []*message // in send order
}

// message is one stored message.
type message struct {
	id, body, md5, sender string
	sent, visibleAt       time.Time
	firstReceive          time.Time
	receiveCount          int
	handle                string // the latest receipt handle
}

// New returns a Service with no queues.
func New(cfg Config) *Service {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "123456789012"
	}
	if cfg.QueueURLBase == "" {
		cfg.QueueURLBase = "https://sqs." + cfg.Region + ".amazonaws.com"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Service{region: cfg.Region, account: cfg.AccountID, urlBase: strings.TrimSuffix(cfg.QueueURLBase, "/"),
		clock: cfg.Clock, throttle: awsjson.NewThrottle(cfg.Seed), queues: map[string]*queue{}, changed: make(chan struct{})}
}

// SetThrottle makes that fraction (0 to 1) of requests fail with RequestThrottled (the
// modelled com.amazonaws.sqs#RequestThrottled, HTTP 403, query code
// RequestThrottled, which aws-sdk-go-v2 retries as a throttle)
// right after authentication, as SQS answers requests beyond the account's
// request rate; 0 turns it off.
func (s *Service) SetThrottle(rate float64) { s.throttle.SetRate(rate) }

// Queue attribute defaults and ranges AWS documents for CreateQueue.
var attributeRanges = map[string]struct{ min, max, def int }{
	"DelaySeconds":                  {0, 900, 0},
	"MaximumMessageSize":            {1024, 1048576, 1048576},
	"MessageRetentionPeriod":        {60, 1209600, 345600},
	"ReceiveMessageWaitTimeSeconds": {0, 20, 0},
	"VisibilityTimeout":             {0, 43200, 30},
}

// opaqueAttributes are accepted and stored without effect.
var opaqueAttributes = map[string]bool{"Policy": true, "KmsMasterKeyId": true, "KmsDataKeyReusePeriodSeconds": true,
	"SqsManagedSseEnabled": true, "RedrivePolicy": true, "RedriveAllowPolicy": true}

var queueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// CreateQueue creates a standard queue (or returns the existing one's URL
// when its attributes match), as the CreateQueue operation does.
func (s *Service) CreateQueue(name string, attributes map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.createQueue(name, attributes)
	if e != nil {
		return "", e
	}
	return s.queueURL(q), nil
}

// createQueue validates and creates. The caller holds s.mu.
func (s *Service) createQueue(name string, attributes map[string]string) (*queue, *awsjson.Error) {
	if strings.HasSuffix(name, ".fifo") || attributes["FifoQueue"] != "" {
		return nil, sqsError(http.StatusBadRequest, "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "FIFO queues are not modelled by this endpoint.")
	}
	if !queueName.MatchString(name) {
		return nil, invalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	full := map[string]string{}
	for key, r := range attributeRanges {
		full[key] = strconv.Itoa(r.def)
	}
	for key, value := range attributes {
		r, ranged := attributeRanges[key]
		switch {
		case ranged:
			n, err := strconv.Atoi(value)
			if err != nil || n < r.min || n > r.max {
				return nil, sqsError(http.StatusBadRequest, "InvalidAttributeValue", "InvalidAttributeValue", fmt.Sprintf("Invalid value for the parameter %s.", key))
			}
		case !opaqueAttributes[key]:
			return nil, sqsError(http.StatusBadRequest, "InvalidAttributeName", "InvalidAttributeName", fmt.Sprintf("Unknown Attribute %s.", key))
		}
		full[key] = value
	}
	if q, ok := s.queues[name]; ok {
		for key, value := range attributes {
			if q.attributes[key] != value {
				return nil, sqsError(http.StatusBadRequest, "QueueNameExists", "QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute "+key)
			}
		}
		return q, nil
	}
	seconds := func(key string) time.Duration {
		n, _ := strconv.Atoi(full[key])
		return time.Duration(n) * time.Second
	}
	maxSize, _ := strconv.Atoi(full["MaximumMessageSize"])
	q := &queue{name: name, attributes: full, visibility: seconds("VisibilityTimeout"), retention: seconds("MessageRetentionPeriod"),
		wait: seconds("ReceiveMessageWaitTimeSeconds"), delay: seconds("DelaySeconds"), maxSize: maxSize, created: s.clock.Now()}
	s.queues[name] = q
	return q, nil
}

// DeleteQueue removes a queue and its messages; it reports whether it existed.
func (s *Service) DeleteQueue(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.queues[name]
	delete(s.queues, name)
	s.notify()
	return ok
}

// QueueURL returns the URL of the named queue.
func (s *Service) QueueURL(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return "", false
	}
	return s.queueURL(q), true
}

func (s *Service) queueURL(q *queue) string { return s.urlBase + "/" + s.account + "/" + q.name }

// Send sends body to the named queue as SendMessage does (validation
// included) and returns the message ID.
func (s *Service) Send(queueName, body string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queueName]
	if !ok {
		return "", queueDoesNotExist()
	}
	m, e := s.send(q, body, nil, "")
	if e != nil {
		return "", e
	}
	return m.id, nil
}

// Depth counts a queue's messages: visible ones (ApproximateNumberOfMessages),
// in flight (ApproximateNumberOfMessagesNotVisible) and delayed
// (ApproximateNumberOfMessagesDelayed).
type Depth struct {
	Visible, InFlight, Delayed int
}

// Depth returns the named queue's message counts, after expiring messages
// past the retention period.
func (s *Service) Depth(queueName string) (Depth, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queueName]
	if !ok {
		return Depth{}, false
	}
	now := s.clock.Now()
	q.expire(now)
	var d Depth
	for _, m := range q.messages {
		switch {
		case !now.Before(m.visibleAt):
			d.Visible++
		case m.receiveCount == 0:
			d.Delayed++
		default:
			d.InFlight++
		}
	}
	return d, true
}

// Queues returns the queue names, sorted.
func (s *Service) Queues() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.queues))
	for name := range s.queues {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// send validates and stores a message. The caller holds s.mu.
func (s *Service) send(q *queue, body string, delay *int, sender string) (*message, *awsjson.Error) {
	if body == "" {
		return nil, invalidParameter("The request must contain the parameter MessageBody.")
	}
	if len(body) > q.maxSize {
		return nil, invalidParameter(fmt.Sprintf("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", q.maxSize))
	}
	for _, r := range body {
		if !(r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)) {
			return nil, sqsError(http.StatusBadRequest, "InvalidMessageContents", "InvalidMessageContents", "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
		}
	}
	d := q.delay
	if delay != nil {
		if *delay < 0 || *delay > 900 {
			return nil, invalidParameter(fmt.Sprintf("Value %d for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.", *delay))
		}
		d = time.Duration(*delay) * time.Second
	}
	sum := md5.Sum([]byte(body))
	now := s.clock.Now()
	s.seq++
	m := &message{id: uuid(s.seq), body: body, md5: hex.EncodeToString(sum[:]), sender: sender, sent: now, visibleAt: now.Add(d)}
	q.messages = append(q.messages, m)
	s.notify()
	return m, nil
}

// notify wakes every long poll. The caller holds s.mu.
func (s *Service) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// expire drops messages older than the retention period.
func (q *queue) expire(now time.Time) {
	kept := q.messages[:0]
	for _, m := range q.messages {
		if now.Sub(m.sent) < q.retention {
			kept = append(kept, m)
		}
	}
	clear(q.messages[len(kept):])
	q.messages = kept
}

// lookupURL resolves a QueueUrl by its /<account>/<name> path. The caller holds s.mu.
func (s *Service) lookupURL(raw string) (*queue, *awsjson.Error) {
	u, err := url.Parse(raw)
	if raw == "" || err != nil {
		return nil, sqsError(http.StatusBadRequest, "InvalidAddress", "InvalidAddress", "The address "+raw+" is not valid for this endpoint.")
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 {
		return nil, sqsError(http.StatusBadRequest, "InvalidAddress", "InvalidAddress", "The address "+raw+" is not valid for this endpoint.")
	}
	q, ok := s.queues[parts[1]]
	if parts[0] != s.account || !ok {
		return nil, queueDoesNotExist()
	}
	return q, nil
}

func uuid(n uint64) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(n*2654435761), uint16(n>>32), uint16(n)&0xfff, uint16(n>>16)&0xfff, n)
}

// sqsError is an SQS error: JSON type `com.amazonaws.sqs#<typ>` and the
// awsQuery code in x-amzn-query-error, which the SDK reports as the code.
func sqsError(status int, typ, queryCode, message string) *awsjson.Error {
	return &awsjson.Error{Status: status, Type: "com.amazonaws.sqs#" + typ, Message: message, QueryError: queryCode + ";Sender"}
}

// requestThrottled is SQS's modelled throttling error.
func requestThrottled() *awsjson.Error {
	return sqsError(http.StatusForbidden, "RequestThrottled", "RequestThrottled", awsjson.ThrottleMessage)
}

func queueDoesNotExist() *awsjson.Error {
	return sqsError(http.StatusBadRequest, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
}

// invalidParameter and missingParameter are SQS's common errors, which its
// model does not declare: the SDK sees them as generic API errors whose code
// comes from x-amzn-query-error.
func invalidParameter(message string) *awsjson.Error {
	return &awsjson.Error{Status: http.StatusBadRequest, Type: "InvalidParameterValue", Message: message, QueryError: "InvalidParameterValue;Sender"}
}

func missingParameter(name string) *awsjson.Error {
	return &awsjson.Error{Status: http.StatusBadRequest, Type: "MissingParameter", Message: "The request must contain the parameter " + name + ".", QueryError: "MissingParameter;Sender"}
}
