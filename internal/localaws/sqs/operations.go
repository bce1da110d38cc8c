package sqs

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/awsjson"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/sigv4"
)

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	awsjson.Serve(w, r, awsjson.Protocol{Service: "sqs", Region: s.region, ContentType: awsjson.ContentType10, TargetPrefix: targetPrefix,
		Throttle: s.throttle, ThrottleError: requestThrottled()}, map[string]awsjson.Operation{
		"CreateQueue":    s.serveCreateQueue,
		"GetQueueUrl":    s.getQueueURL,
		"SendMessage":    s.sendMessage,
		"ReceiveMessage": s.receiveMessage,
		"DeleteMessage":  s.deleteMessage,
	})
}

// serveCreateQueue answers CreateQueue.
//
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html
//
// Standard queues only. Attributes DelaySeconds, MaximumMessageSize,
// MessageRetentionPeriod, ReceiveMessageWaitTimeSeconds and VisibilityTimeout
// take effect within AWS's ranges (InvalidAttributeValue outside them);
// Policy, KMS, SSE and redrive attributes are stored without effect; others
// are InvalidAttributeName. Creating an existing queue returns its URL when
// the given attributes match, QueueNameExists otherwise.
func (s *Service) serveCreateQueue(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		QueueName  *string
		Attributes map[string]string
		// tags are accepted and ignored
		Tags map[string]string `json:"tags"`
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.QueueName == nil {
		return nil, missingParameter("QueueName")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.createQueue(*in.QueueName, in.Attributes)
	if e != nil {
		return nil, e
	}
	return map[string]string{"QueueUrl": s.queueURL(q)}, nil
}

// getQueueURL answers GetQueueUrl.
//
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_GetQueueUrl.html
//
// An unknown queue, or a QueueOwnerAWSAccountId other than the service's
// account, is QueueDoesNotExist (query code AWS.SimpleQueueService.NonExistentQueue).
func (s *Service) getQueueURL(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		QueueName              *string
		QueueOwnerAWSAccountId *string
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.QueueName == nil {
		return nil, missingParameter("QueueName")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[*in.QueueName]
	if !ok || (in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != s.account) {
		return nil, queueDoesNotExist()
	}
	return map[string]string{"QueueUrl": s.queueURL(q)}, nil
}

// sendMessage answers SendMessage.
//
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
//
// MessageBody must be 1 byte up to the queue's MaximumMessageSize (1 MiB by
// default) of the characters SQS allows (InvalidMessageContents); DelaySeconds
// 0-900 overrides the queue's delay. Answers MessageId and MD5OfMessageBody.
// MessageAttributes and MessageSystemAttributes are accepted and dropped.
func (s *Service) sendMessage(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		QueueUrl     *string
		MessageBody  *string
		DelaySeconds *int
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.QueueUrl == nil {
		return nil, missingParameter("QueueUrl")
	}
	if in.MessageBody == nil {
		return nil, missingParameter("MessageBody")
	}
	sender := ""
	if cred, err := sigv4.Parse(r); err == nil {
		sender = cred.AccessKeyID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.lookupURL(*in.QueueUrl)
	if e != nil {
		return nil, e
	}
	m, e := s.send(q, *in.MessageBody, in.DelaySeconds, sender)
	if e != nil {
		return nil, e
	}
	return map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5}, nil
}

// receiveMessage answers ReceiveMessage.
//
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html
//
// MaxNumberOfMessages 1-10 (default 1); VisibilityTimeout 0-43200 (default the
// queue's) hides the received messages, which reappear unless deleted in time;
// WaitTimeSeconds 0-20 (default the queue's ReceiveMessageWaitTimeSeconds)
// long-polls: the call returns as soon as a message is available, or empty
// when the wait ends. Each receive issues a new ReceiptHandle and counts
// ApproximateReceiveCount. System attributes (AttributeNames or
// MessageSystemAttributeNames: SentTimestamp, ApproximateReceiveCount,
// ApproximateFirstReceiveTimestamp, SenderId, All) are answered when asked.
// Messages are handed out oldest first (standard queues promise no order).
func (s *Service) receiveMessage(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		QueueUrl                    *string
		MaxNumberOfMessages         *int
		VisibilityTimeout           *int
		WaitTimeSeconds             *int
		AttributeNames              []string
		MessageSystemAttributeNames []string
		MessageAttributeNames       []string
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.QueueUrl == nil {
		return nil, missingParameter("QueueUrl")
	}
	limit := 1
	if in.MaxNumberOfMessages != nil {
		if limit = *in.MaxNumberOfMessages; limit < 1 || limit > 10 {
			return nil, invalidParameter(fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", limit))
		}
	}
	if v := in.VisibilityTimeout; v != nil && (*v < 0 || *v > 43200) {
		return nil, invalidParameter(fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", *v))
	}
	if v := in.WaitTimeSeconds; v != nil && (*v < 0 || *v > 20) {
		return nil, invalidParameter(fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *v))
	}
	want := map[string]bool{}
	for _, name := range append(in.AttributeNames, in.MessageSystemAttributeNames...) {
		want[name] = true
	}

	s.mu.Lock()
	q, e := s.lookupURL(*in.QueueUrl)
	if e != nil {
		s.mu.Unlock()
		return nil, e
	}
	wait := q.wait
	if in.WaitTimeSeconds != nil {
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	deadline := s.clock.Now().Add(wait)
	for {
		now := s.clock.Now()
		visibility := q.visibility
		if in.VisibilityTimeout != nil {
			visibility = time.Duration(*in.VisibilityTimeout) * time.Second
		}
		if got := s.take(q, now, limit, visibility, want); len(got) > 0 || !now.Before(deadline) {
			s.mu.Unlock()
			if len(got) == 0 {
				return struct{}{}, nil
			}
			return map[string]any{"Messages": got}, nil
		}
		// Sleep until a send, the next hidden message's reappearance, or the deadline.
		wake := deadline
		for _, m := range q.messages {
			if m.visibleAt.After(now) && m.visibleAt.Before(wake) {
				wake = m.visibleAt
			}
		}
		changed := s.changed
		s.mu.Unlock()
		timer := s.clock.NewTimer(wake.Sub(now))
		select {
		case <-r.Context().Done():
			timer.Stop()
			return struct{}{}, nil
		case <-changed:
		case <-timer.C():
		}
		timer.Stop()
		s.mu.Lock()
		if s.queues[q.name] != q {
			s.mu.Unlock()
			return nil, queueDoesNotExist()
		}
	}
}

// take hands out up to limit visible messages, hiding each for visibility.
// The caller holds s.mu.
func (s *Service) take(q *queue, now time.Time, limit int, visibility time.Duration, want map[string]bool) []map[string]any {
	q.expire(now)
	var out []map[string]any
	for _, m := range q.messages {
		if len(out) == limit {
			break
		}
		if now.Before(m.visibleAt) {
			continue
		}
		m.receiveCount++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(visibility)
		s.seq++
		m.handle = base64.RawURLEncoding.EncodeToString([]byte(q.name + "\x00" + m.id + "\x00" + strconv.FormatUint(s.seq, 10)))
		item := map[string]any{"MessageId": m.id, "ReceiptHandle": m.handle, "MD5OfBody": m.md5, "Body": m.body}
		attributes := map[string]string{}
		all := want["All"]
		if all || want["SentTimestamp"] {
			attributes["SentTimestamp"] = strconv.FormatInt(m.sent.UnixMilli(), 10)
		}
		if all || want["ApproximateReceiveCount"] {
			attributes["ApproximateReceiveCount"] = strconv.Itoa(m.receiveCount)
		}
		if all || want["ApproximateFirstReceiveTimestamp"] {
			attributes["ApproximateFirstReceiveTimestamp"] = strconv.FormatInt(m.firstReceive.UnixMilli(), 10)
		}
		if (all || want["SenderId"]) && m.sender != "" {
			attributes["SenderId"] = m.sender
		}
		if len(attributes) > 0 {
			item["Attributes"] = attributes
		}
		out = append(out, item)
	}
	return out
}

// deleteMessage answers DeleteMessage.
//
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html
//
// A handle that is not one this queue issued is ReceiptHandleIsInvalid (404).
// Deleting an already deleted message succeeds; a handle from an earlier
// receive than the latest succeeds without deleting, as AWS documents.
func (s *Service) deleteMessage(r *http.Request) (any, *awsjson.Error) {
	var in struct {
		QueueUrl      *string
		ReceiptHandle *string
	}
	if e := awsjson.Decode(r, &in); e != nil {
		return nil, e
	}
	if in.QueueUrl == nil {
		return nil, missingParameter("QueueUrl")
	}
	if in.ReceiptHandle == nil {
		return nil, missingParameter("ReceiptHandle")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.lookupURL(*in.QueueUrl)
	if e != nil {
		return nil, e
	}
	raw, err := base64.RawURLEncoding.DecodeString(*in.ReceiptHandle)
	parts := strings.Split(string(raw), "\x00")
	if err != nil || len(parts) != 3 || parts[0] != q.name {
		return nil, sqsError(http.StatusNotFound, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
			fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", *in.ReceiptHandle))
	}
	for i, m := range q.messages {
		if m.id == parts[1] {
			if m.handle == *in.ReceiptHandle {
				q.messages = append(q.messages[:i], q.messages[i+1:]...)
			}
			break
		}
	}
	return struct{}{}, nil
}
