// Package interruption is the AWS provider's interruption controller: it
// long-polls the SQS queue that EventBridge rules feed (settings
// InterruptionQueue) and acts on the instances the events name.
//
// # Messages
//
// Parse classifies an SQS body, the EventBridge event JSON, by (version "0",
// source, detail-type):
//
//	aws.ec2    EC2 Spot Instance Interruption Warning        spot_interrupted
//	aws.ec2    EC2 Instance Rebalance Recommendation         rebalance_recommendation
//	aws.health AWS Health Event (service EC2, scheduledChange) scheduled_change
//	aws.ec2    EC2 Instance State-change Notification        instance_stopped (stopping, stopped)
//	                                                         instance_terminated (shutting-down, terminated)
//	aws.ec2    EC2 Capacity Reservation Instance Interruption Warning
//	           (also the "EC2 Interruptible Capacity Reservation ..." spelling)
//	                                                         capacity_reservation_interrupted
//
// Anything else is a no-op; malformed JSON or a handled event without an
// instance ID is an error.
//
// # Polling
//
// The controller runs on the leader. It resolves the queue URL with
// GetQueueUrl, then loops on ReceiveMessage (10 messages, 20 s long poll,
// 20 s visibility, SentTimestamp), handling each batch 10 at a time. A
// message is deleted once handled; malformed and no-op messages are logged,
// counted and deleted; a message whose handling failed (an API error) is left
// on the queue and comes back after the visibility timeout. Queue errors are
// retried after Options.ErrorBackoff by the injected clock.
//
// # Handling
//
// NodeClaims are found by listing them and matching status.providerID
// (aws:///<zone>/<instance-id>) on the "/<instance-id>" suffix: the message
// has no zone, so the exact-match provider-ID index cannot serve. Their Nodes
// are the Nodes with the same provider ID. Instances without a NodeClaim are
// ignored. For each claim the controller publishes Karpenter's event on the
// NodeClaim and the Node (SpotInterrupted, RebalanceRecommendation,
// Unhealthy, Stopping, Terminating; CapacityReservationInterrupted is
// Dovetail's name), marks the (instance type, zone, spot) offering
// unavailable for a spot warning, and, for every kind but rebalance, deletes
// the NodeClaim unless it is already being deleted. The core's termination
// then taints, drains and terminates it, and the claim is counted in
// karpenter_nodeclaims_disrupted_total{reason=<kind>}.
//
// # Replacement before the drain
//
// For the two warnings that come two minutes before the instance goes away
// (spot and capacity reservation interruptions) the controller first taints
// the Node karpenter.sh/disrupted:NoSchedule, the core's disruption taint,
// then deletes the claim. What then happens, all in the core and unchanged:
//
//   - the taint stops new pods from landing on the node from the moment the
//     message is handled;
//   - the provisioner's node trigger (controllers/provisioning NodeTrigger)
//     sees a Node carrying the disrupted taint and opens a provisioning
//     batch, which closes after --batch-idle-duration (1 s by default, at
//     most --batch-max-duration, 10 s);
//   - the provisioner already counts the reschedulable pods of a machine
//     being deleted as needing a new home: the state model marks a node
//     MarkedForDeletion when its NodeClaim has a deletion timestamp, and
//     Provisioner.pendingPods adds the pods of such nodes (not DaemonSet,
//     mirror, terminal or deleting pods, nor pods tolerating the disrupted
//     taint) to the scheduling simulation.
//
// So the replacement NodeClaim is created about one batch window (≈1-2 s)
// after the message is received, while the old node drains, not after the
// drain. Deleting the claim alone would have much the same effect two
// termination reconciles later (the NodeClaim termination deletes the Node,
// whose termination taints it, which fires the trigger; the claim's deletion
// timestamp already counts its pods); tainting here removes that dependency
// on the termination queues and closes the node to new pods at once. If the claim deletion fails after the taint, the
// message is retried, and meanwhile the disruption controller's cleanup may
// remove the taint from a node no command owns; that is harmless.
//
// # Not done
//
// Karpenter also marks an interrupted capacity reservation unavailable;
// Dovetail's unavailable-offerings cache has no reservation entries, so a
// capacity reservation warning only deletes the claim. The DescribeInstanceStatus
// poll (impaired instances, scheduled events) is not implemented.
//
// # Metrics
//
// karpenter_interruption_received_messages_total{message_type} (the kind, or
// "malformed"), karpenter_interruption_deleted_messages_total, and
// karpenter_interruption_message_queue_duration_seconds (SentTimestamp to
// handling, by the injected clock), on Options.Registerer.
package interruption
