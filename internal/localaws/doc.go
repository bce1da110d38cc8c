// Package localaws is the local AWS endpoint: one HTTP server on a loopback
// port that answers the AWS APIs Karpenter's AWS provider calls, for
// unmodified aws-sdk-go-v2 clients (BaseEndpoint = Server.URL, or
// --endpoint-url), with an account seeded for one EKS cluster and a bridge
// that turns running instances into kwok-managed Nodes. Tests, the demo and
// `dovetail up` use it to run the AWS cloud provider without an AWS account.
//
// # Routing
//
// Every request goes to the service named in its SigV4 credential scope
// (Credential=<key>/<date>/<region>/<service>/aws4_request; see
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html):
// ec2, iam, ssm, pricing, sqs, eks. A request without a usable scope is
// routed by its wire shape (awsQuery Version 2016-11-15 -> EC2, 2010-05-08 ->
// IAM; awsJson X-Amz-Target AmazonSSM., AWSPriceListService., AmazonSQS.;
// restJson1 /clusters/... -> EKS) so that the service refuses it with its own
// error (MissingAuthenticationToken, IncompleteSignature, ...), as AWS does.
// Anything else is UnknownServiceException (HTTP 400), an answer of this
// endpoint only. Signatures are read, never verified. AWSConfig returns an
// aws.Config with fixed local static credentials, the region and the URL; it
// reads no environment.
//
// # Operations modelled (see each sub-package's doc for the details)
//
//   - EC2 (internal/localaws/ec2, EC2 Query API
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Welcome.html):
//     DescribeSubnets, DescribeSecurityGroups, DescribeImages,
//     DescribeInstanceTypes, DescribeInstanceTypeOfferings,
//     DescribeSpotPriceHistory, CreateLaunchTemplate,
//     DescribeLaunchTemplates, DeleteLaunchTemplate, CreateFleet (instant),
//     DescribeInstances, TerminateInstances, CreateTags,
//     DescribeCapacityReservations over the On-Demand Capacity Reservations
//     and Capacity Blocks seeded with AddCapacityReservation (counts
//     enforced by CreateFleet, which launches into a reservation through a
//     launch template that targets it, DefaultTargetCapacityType
//     capacity-block included); filters, paging, DryRun (answered before
//     the action's parameters are checked); instance lifecycle pending -> running -> shutting-down ->
//     terminated (and stopping -> stopped) on the endpoint's clock
//     (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html);
//     terminated instances described for an hour.
//   - IAM (awsQuery): Get/Create/Delete/Tag/ListInstanceProfiles,
//     Add/RemoveRoleToInstanceProfile, GetRole.
//   - SSM (awsJson1_1): GetParameter, GetParameters on the seeded public
//     parameters.
//   - Price List (awsJson1_1): GetProducts for AmazonEC2 on-demand Linux.
//   - SQS (awsJson1_0): CreateQueue, GetQueueUrl, SendMessage,
//     ReceiveMessage (long polling), DeleteMessage on standard queues.
//   - EKS (restJson1): DescribeCluster.
//
// # Seeded account (Start)
//
//   - A VPC 10.0.0.0/16 with one /19 subnet per zone <region>a, b, c
//     (10.0.0.0/19, 10.0.32.0/19, 10.0.64.0/19; 8187 free addresses each),
//     the EKS cluster security group and a node security group, all tagged
//     karpenter.sh/discovery=<cluster> and Name.
//   - IAM role KarpenterNodeRole-<cluster>.
//   - EKS-optimized AMIs (owner alias amazon) for Config.KubernetesVersion,
//     two releases per line, 60 and 30 days old: AL2023 standard
//     x86_64/arm64, nvidia x86_64/arm64, neuron x86_64; AL2 x86_64, arm64,
//     gpu; Bottlerocket aws-k8s and aws-k8s-nvidia x86_64/arm64; Windows
//     Server 2022 Core. Each is published under EKS's public SSM parameters
//     (https://docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id.html,
//     .../retrieve-ami-id-bottlerocket.html, .../retrieve-windows-ami-id.html):
//     the recommended/latest alias names the newer release, and each release
//     has its versioned parameter (none for Windows). PublishAMI adds a release
//     and moves the alias (drift).
//   - The interruption queue Config.InterruptionQueue (default the cluster
//     name; MessageRetentionPeriod 300) and the EKS cluster record
//     (endpoint, CA, version, service CIDR).
//
// # Node bridge (NodeBridge, Config.Kubernetes)
//
// No Node exists while an instance is pending. Config.BootDelay (default 0)
// after the instance entered running, by the endpoint's clock
// (NodeBridge.Booting lists the instances still waiting), its user data is
// read as the node's bootstrap would (internal/localaws/bootstrap, with the
// family of the seeded AMI it launched from) and a Node is created as the
// kubelet registers it:
// named by the instance's private DNS name, spec.providerID
// aws:///<zone>/<instance-id>, the user data's labels and register-with-taints
// plus kubernetes.io/hostname, arch and os (and their beta.kubernetes.io
// forms), node.kubernetes.io/instance-type,
// topology.kubernetes.io/zone and region and topology.k8s.aws/zone-id (what
// the kubelet and the AWS cloud controller manager set), capacity and
// allocatable from internal/catalog for the family and the user data's max
// pods, and annotation kwok.x-k8s.io/node=fake so that kwok manages it.
// User data that does not parse, or names another cluster or (when
// Config.ClusterEndpoint is set) another API server, makes no Node: the
// failure is logged and listed by Server.BootFailures. The Node is deleted
// as soon as the instance is stopping, stopped, shutting down or terminated
// (an instance that leaves running during its BootDelay never registers).
// API errors are retried with exponential backoff.
//
// # Faults
//
// AddCapacityReservation (seeds a reservation or Capacity Block),
// SetInsufficientCapacity, SetFleetError (CreateFleet errors for account
// limits, unfulfillable capacity and UnauthorizedOperation), SetThrottle
// (per service, each with its own throttling error: EC2
// RequestLimitExceeded, IAM Throttling, SSM, Pricing and EKS
// ThrottlingException, SQS RequestThrottled), SetDescribeLag,
// StopInstance and TerminateInstance (behind the client's back), and
// interruption messages on the queue with the exact EventBridge bodies
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html,
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html,
// https://docs.aws.amazon.com/health/latest/ug/aws-health-events-eventbridge-schema.html,
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html):
// SendSpotInterruption (and the reclaim two minutes later by the clock),
// SendRebalanceRecommendation, SendScheduledChange, SendStateChange,
// SendCapacityReservationInterruption.
//
// # Not modelled
//
// Signature verification and IAM authorisation (UnauthorizedOperation only
// through SetFleetError); any operation not listed above (RunInstances,
// launch template versions, fleets of type request/maintain, creating,
// modifying or purchasing capacity reservations and blocks over the wire,
// placement groups, DescribeAvailabilityZones, IPv6, public IPs, EBS
// volumes; IAM role creation and policies; SSM writes over the wire,
// SecureString, labels; other Price List services, reserved and spot terms;
// FIFO SQS queues, batch operations, message attributes; every EKS operation
// but DescribeCluster); spot prices that change over time; account limits
// (CreateFleet reports them only through SetFleetError) and the services'
// real request rates (throttling is a set fraction of requests); idempotency
// by ClientToken beyond CreateFleet's; eventual consistency beyond DescribeInstances' lag;
// EventBridge rules (events are put straight on the queue, and only when a
// fault method is called: EC2 state changes do not emit state-change
// notifications by themselves); the kubelet itself (kwok plays it:
// conditions, heartbeats), including kubelet-reported resources such as GPUs
// beyond the catalog's; and the cloud node lifecycle controller's shutdown
// taint (a real cluster taints the Node of a stopped instance,
// node.cloudprovider.kubernetes.io/shutdown, and deletes it only once the
// instance is terminated; the bridge deletes it on stop).
package localaws
