// Package sqs is the local AWS endpoint's SQS: standard queues on SQS's
// awsJson1_0 wire protocol (X-Amz-Target AmazonSQS.<Operation>), with the
// query-compatible errors the SDK reads (`__type` com.amazonaws.sqs#<Shape>
// plus the x-amzn-query-error header "<awsQuery code>;Sender"), for an
// unmodified aws-sdk-go-v2 SQS client to consume an interruption queue as
// Karpenter does. events.go builds the EventBridge event bodies Karpenter's
// interruption controller parses.
//
// Modelled:
//   - CreateQueue (standard queues; DelaySeconds, MaximumMessageSize,
//     MessageRetentionPeriod, ReceiveMessageWaitTimeSeconds, VisibilityTimeout
//     with AWS's defaults and ranges; Policy/KMS/SSE/redrive attributes stored
//     without effect; idempotent for equal attributes, QueueNameExists
//     (QueueAlreadyExists) otherwise), GetQueueUrl (QueueDoesNotExist /
//     AWS.SimpleQueueService.NonExistentQueue), SendMessage (MessageId,
//     MD5OfMessageBody; body size up to MaximumMessageSize, 1 MiB by default;
//     allowed characters, InvalidMessageContents; DelaySeconds 0-900),
//     ReceiveMessage (MaxNumberOfMessages 1-10, VisibilityTimeout 0-43200,
//     WaitTimeSeconds 0-20 long polling that returns as soon as a message is
//     sent or a hidden one reappears, and ends with the request context; a
//     new ReceiptHandle per receive; system attributes SentTimestamp,
//     ApproximateReceiveCount, ApproximateFirstReceiveTimestamp, SenderId and
//     All on request), DeleteMessage (ReceiptHandleIsInvalid, 404, for a
//     handle this queue never issued; a stale handle succeeds without
//     deleting, as AWS documents), message retention.
//   - Missing or invalid parameters: MissingParameter / InvalidParameterValue
//     in x-amzn-query-error (SQS's common errors, undeclared in its model, so
//     the SDK reports them as generic API errors with that code);
//     InvalidAddress for a QueueUrl without an /<account>/<name> path.
//   - Requests must be SigV4-signed for service "sqs" in the configured region
//     (MissingAuthenticationTokenException, IncompleteSignatureException,
//     InvalidSignatureException, HTTP 403); other operations are
//     UnknownOperationException.
//   - Go API: CreateQueue, DeleteQueue, QueueURL, Queues, Send, Depth; event
//     builders SpotInterruptionWarning, RebalanceRecommendation,
//     InstanceStateChange, CapacityReservationInterruptionWarning,
//     HealthScheduledChange.
//
// Not modelled: FIFO queues (UnsupportedOperation), message attributes
// (accepted and dropped), batch operations, ChangeMessageVisibility,
// PurgeQueue, queue attributes APIs, dead-letter redrive, the at-least-once
// duplicates and sampling of real standard queues (delivery here is exactly
// once per visibility window, oldest first), SSE, queue policies, SQS's real
// request quotas, and signature verification. SetThrottle refuses a fraction
// of the requests with the modelled RequestThrottled error (HTTP 403, query
// code RequestThrottled) right after authentication.
package sqs
