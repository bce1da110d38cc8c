package sqs

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// guard bounds how long a test waits for a goroutine in real time.
const guard = 10 * time.Second

func newClient(t *testing.T, s *Service, creds aws.CredentialsProvider) *sqs.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds, Retryer: aws.NopRetryer{}})
}

func static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")
}

func setup(t *testing.T, attributes map[string]string) (*Service, *clocktesting.FakeClock, *sqs.Client, string) {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	s := New(Config{Clock: clk})
	url, err := s.CreateQueue("interruption", attributes)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, newClient(t, s, static()), url
}

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	if err != nil {
		return "non-API error: " + err.Error()
	}
	return ""
}

func TestSendReceiveDelete(t *testing.T) {
	ctx := context.Background()
	s, clk, c, url := setup(t, nil)
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruption")})
	if err != nil || *got.QueueUrl != url || url != "https://sqs.us-east-1.amazonaws.com/123456789012/interruption" {
		t.Fatalf("GetQueueUrl = %v, %v; want %s", got, err, url)
	}
	body := `{"version":"0"}`
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	sum := md5.Sum([]byte(body))
	if *sent.MD5OfMessageBody != hex.EncodeToString(sum[:]) {
		t.Errorf("MD5OfMessageBody = %s", *sent.MD5OfMessageBody)
	}
	clk.Step(time.Second)
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 20,
		AttributeNames: []types.QueueAttributeName{"SentTimestamp"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}, MessageAttributeNames: []string{"All"}}) //nolint:staticcheck // the legacy AttributeNames parameter, which older clients still send, must keep working
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("ReceiveMessage = %+v, %v", out, err)
	}
	m := out.Messages[0]
	if diff := cmp.Diff([]string{*sent.MessageId, body, *sent.MD5OfMessageBody}, []string{*m.MessageId, *m.Body, *m.MD5OfBody}); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	wantAttrs := map[string]string{"SentTimestamp": "1767323045000", "ApproximateReceiveCount": "1"}
	if diff := cmp.Diff(wantAttrs, m.Attributes); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	if d, _ := s.Depth("interruption"); d != (Depth{InFlight: 1}) {
		t.Errorf("Depth = %+v", d)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("second DeleteMessage: %v", err)
	}
	if d, _ := s.Depth("interruption"); d != (Depth{}) {
		t.Errorf("Depth after delete = %+v", d)
	}
	empty, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(empty.Messages) != 0 {
		t.Fatalf("ReceiveMessage on empty queue = %+v, %v", empty, err)
	}
}

func TestVisibilityTimeout(t *testing.T) {
	ctx := context.Background()
	s, clk, c, url := setup(t, map[string]string{"VisibilityTimeout": "30"})
	if _, err := s.Send("interruption", "m"); err != nil {
		t.Fatal(err)
	}
	receive := func(vis int32) []types.Message {
		t.Helper()
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: vis, AttributeNames: []types.QueueAttributeName{"All"}}) //nolint:staticcheck // the legacy AttributeNames parameter, which older clients still send, must keep working
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		return out.Messages
	}
	first := receive(20)
	if len(first) != 1 {
		t.Fatalf("first receive: %d messages", len(first))
	}
	clk.Step(19 * time.Second)
	if got := receive(0); len(got) != 0 {
		t.Fatalf("message visible before its timeout: %+v", got)
	}
	clk.Step(time.Second)
	second := receive(0) // the SDK omits 0: the queue default (30 s) applies
	if len(second) != 1 {
		t.Fatalf("message did not reappear after 20 s")
	}
	if *second[0].ReceiptHandle == *first[0].ReceiptHandle {
		t.Errorf("receipt handle did not change")
	}
	if second[0].Attributes["ApproximateReceiveCount"] != "2" || second[0].Attributes["ApproximateFirstReceiveTimestamp"] != "1767323045000" || second[0].Attributes["SenderId"] != "" {
		t.Errorf("attributes = %v", second[0].Attributes)
	}
	// The stale handle deletes nothing; the queue default (30 s) hides it now.
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage(stale): %v", err)
	}
	clk.Step(29 * time.Second)
	if d, _ := s.Depth("interruption"); d != (Depth{InFlight: 1}) {
		t.Fatalf("Depth = %+v, want one in flight", d)
	}
	clk.Step(time.Second)
	if d, _ := s.Depth("interruption"); d != (Depth{Visible: 1}) {
		t.Fatalf("Depth = %+v, want one visible", d)
	}
}

func TestRetention(t *testing.T) {
	s, clk, _, _ := setup(t, map[string]string{"MessageRetentionPeriod": "300"})
	if _, err := s.Send("interruption", "old"); err != nil {
		t.Fatal(err)
	}
	clk.Step(299 * time.Second)
	if d, _ := s.Depth("interruption"); d.Visible != 1 {
		t.Fatalf("Depth = %+v before retention", d)
	}
	clk.Step(time.Second)
	if d, _ := s.Depth("interruption"); d != (Depth{}) {
		t.Fatalf("Depth = %+v after retention", d)
	}
}

// waitForWaiter returns once a long poll has parked on the fake clock.
func waitForWaiter(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("ReceiveMessage never started waiting")
		}
		runtime.Gosched()
	}
}

func TestLongPollReturnsOnSend(t *testing.T) {
	s, clk, c, url := setup(t, nil)
	done := make(chan *sqs.ReceiveMessageOutput, 1)
	errs := make(chan error, 1)
	go func() {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		if err != nil {
			errs <- err
			return
		}
		done <- out
	}()
	waitForWaiter(t, clk)
	// The fake clock never moves: only the send can end the wait.
	if _, err := s.Send("interruption", "wake up"); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if len(out.Messages) != 1 || *out.Messages[0].Body != "wake up" {
			t.Fatalf("long poll returned %+v", out.Messages)
		}
	case err := <-errs:
		t.Fatalf("ReceiveMessage: %v", err)
	case <-time.After(guard):
		t.Fatal("long poll did not return after a send")
	}
}

func TestLongPollTimesOutAndSeesReappearingMessages(t *testing.T) {
	s, clk, c, url := setup(t, map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})
	poll := func() chan []types.Message {
		ch := make(chan []types.Message, 1)
		go func() {
			out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 5})
			if err != nil {
				t.Error(err)
			}
			ch <- out.Messages
		}()
		return ch
	}
	await := func(ch chan []types.Message) []types.Message {
		select {
		case m := <-ch:
			return m
		case <-time.After(guard):
			t.Fatal("long poll did not return")
			return nil
		}
	}
	// Queue default wait (20 s) applies; the wait ends empty when the clock passes it.
	ch := poll()
	waitForWaiter(t, clk)
	clk.Step(20 * time.Second)
	if got := await(ch); len(got) != 0 {
		t.Fatalf("timed-out poll returned %+v", got)
	}
	// A message hidden by an earlier receive wakes a poll when it reappears.
	if _, err := s.Send("interruption", "m"); err != nil {
		t.Fatal(err)
	}
	if got := await(poll()); len(got) != 1 {
		t.Fatalf("first receive: %+v", got)
	}
	ch = poll()
	waitForWaiter(t, clk)
	clk.Step(5 * time.Second)
	if got := await(ch); len(got) != 1 || *got[0].Body != "m" {
		t.Fatalf("poll did not see the reappearing message: %+v", got)
	}
}

func TestLongPollEndsWithContext(t *testing.T) {
	_, clk, c, url := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		errs <- err
	}()
	waitForWaiter(t, clk)
	cancel()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ReceiveMessage after cancel: %v", err)
		}
	case <-time.After(guard):
		t.Fatal("ReceiveMessage did not end with its context")
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s, _, c, url := setup(t, nil)
	if _, err := s.Send("interruption", "x"); err != nil {
		t.Fatal(err)
	}
	other, _ := s.CreateQueue("other", nil)
	otherMsgs := func() string {
		_, _ = s.Send("other", "y")
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(other)})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive from other: %v", err)
		}
		return *out.Messages[0].ReceiptHandle
	}()
	cases := map[string]struct {
		call func() error
		want string
	}{
		"unknown queue name": {want: "AWS.SimpleQueueService.NonExistentQueue", call: func() error {
			_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
			var typed *types.QueueDoesNotExist
			if !errors.As(err, &typed) {
				t.Errorf("GetQueueUrl error %T is not *types.QueueDoesNotExist", err)
			}
			return err
		}},
		"other owner": {want: "AWS.SimpleQueueService.NonExistentQueue", call: func() error {
			_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruption"), QueueOwnerAWSAccountId: aws.String("999999999999")})
			return err
		}},
		"unknown queue url": {want: "AWS.SimpleQueueService.NonExistentQueue", call: func() error {
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(strings.Replace(url, "interruption", "gone", 1)), MessageBody: aws.String("x")})
			return err
		}},
		"bad queue url": {want: "InvalidAddress", call: func() error {
			_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("not-a-url")})
			return err
		}},
		"too many messages": {want: "InvalidParameterValue", call: func() error {
			_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11})
			return err
		}},
		"wait too long": {want: "InvalidParameterValue", call: func() error {
			_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 21})
			return err
		}},
		"empty body": {want: "InvalidParameterValue", call: func() error {
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("")})
			return err
		}},
		"body too large": {want: "InvalidParameterValue", call: func() error {
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(strings.Repeat("a", 1048577))})
			return err
		}},
		"bad characters": {want: "InvalidMessageContents", call: func() error {
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("a\x01")})
			return err
		}},
		"garbage handle": {want: "ReceiptHandleIsInvalid", call: func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("garbage!")})
			var typed *types.ReceiptHandleIsInvalid
			if !errors.As(err, &typed) {
				t.Errorf("DeleteMessage error %T is not *types.ReceiptHandleIsInvalid", err)
			}
			return err
		}},
		"other queue's handle": {want: "ReceiptHandleIsInvalid", call: func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(otherMsgs)})
			return err
		}},
		"queue exists with other attributes": {want: "QueueAlreadyExists", call: func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("interruption"), Attributes: map[string]string{"VisibilityTimeout": "10"}})
			return err
		}},
		"bad attribute value": {want: "InvalidAttributeValue", call: func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"MessageRetentionPeriod": "59"}})
			return err
		}},
		"unknown attribute": {want: "InvalidAttributeName", call: func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"Colour": "blue"}})
			return err
		}},
		"bad queue name": {want: "InvalidParameterValue", call: func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bad name")})
			return err
		}},
		"unsupported operation": {want: "UnknownOperationException", call: func() error {
			_, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
			return err
		}},
		"unsigned": {want: "MissingAuthenticationTokenException", call: func() error {
			_, err := newClient(t, s, aws.AnonymousCredentials{}).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruption")})
			return err
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := code(tc.call()); got != tc.want {
				t.Fatalf("error code = %q, want %q", got, tc.want)
			}
		})
	}
	// Creating the same queue with the same attributes is idempotent.
	again, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("interruption"), Attributes: map[string]string{"VisibilityTimeout": "30"}})
	if err != nil || *again.QueueUrl != url {
		t.Fatalf("CreateQueue(existing) = %v, %v", again, err)
	}
}
