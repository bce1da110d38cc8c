// Package ec2 is the EC2 service of the local AWS endpoint: an in-memory
// model of the EC2 Query API that unmodified aws-sdk-go-v2 clients talk to
// over HTTP, so that the AWS cloud provider can be exercised without an AWS
// account.
//
// # Wire protocol
//
// Service implements http.Handler for EC2 Query requests: form-encoded
// Action=...&Version=2016-11-15 with flattened lists (InstanceId.1,
// Filter.1.Value.1, LaunchTemplateConfigs.1.Overrides.2.InstanceType), and
// XML responses <ActionResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
// whose lists are <item> elements. Errors are
// <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>
// with HTTP 400 (401/403 for authentication, 412 DryRunOperation, 503
// RequestLimitExceeded). Requests must carry a SigV4 Authorization header
// scoped to service ec2 and the service's region: none ->
// MissingAuthenticationToken (403), malformed -> IncompleteSignature, wrong
// scope -> AuthFailure (401). Signatures are not verified.
//
// # Operations modelled
//
//   - DescribeSubnets, DescribeSecurityGroups, DescribeImages (Owners self,
//     amazon or an account, IncludeDeprecated), DescribeInstanceTypes,
//     DescribeInstanceTypeOfferings (region, availability-zone,
//     availability-zone-id), DescribeSpotPriceHistory (Linux/UNIX only).
//   - CreateLaunchTemplate, DescribeLaunchTemplates, DeleteLaunchTemplate:
//     version 1 only; the data is kept (LaunchTemplates) and used by
//     CreateFleet.
//   - CreateFleet, Type=instant only, spot or on-demand: overrides are
//     ordered by the allocation strategy (lowest-price,
//     price-capacity-optimized, capacity-optimized, diversified: cheapest
//     first, ties by Priority; prioritized, capacity-optimized-prioritized:
//     Priority first); a pool with insufficient capacity
//     (SetInsufficientCapacity), no free address, an unknown AMI or a
//     mismatched architecture is reported in Errors and skipped; all of
//     TotalTargetCapacity launches from the first pool that works. A launch
//     template whose CapacityReservationSpecification targets a capacity
//     reservation launches only its type in its zone, one slot per
//     instance; a full reservation is ReservationCapacityExceeded. An
//     on-demand launch whose template does not set the preference none runs
//     in a matching active open reservation with a slot, as on EC2.
//     DefaultTargetCapacityType capacity-block is served as on-demand.
//     A ClientToken makes it idempotent, as EC2 documents: the same token
//     with the same parameters answers the first answer again and launches
//     nothing; with other parameters, IdempotentParameterMismatch. Tokens
//     are kept for the endpoint's life; only answered requests record one.
//   - DescribeInstances, TerminateInstances, CreateTags (instances, launch
//     templates, subnets, security groups, AMIs, VPCs).
//   - DescribeCapacityReservations (instance-type, owner-id,
//     availability-zone, instance-platform, tenancy, state,
//     instance-match-criteria, end-date-type) over the reservations seeded
//     with AddCapacityReservation; an instance gives its slot back when it
//     starts shutting down.
//
// Every other Action answers InvalidAction. DryRun=true answers
// DryRunOperation (HTTP 412) for every action once the request is
// authenticated, not throttled and names a known action, before any of the
// action's own parameters is read: a dry run with a missing required
// parameter or an out-of-range MaxResults still answers DryRunOperation, and
// a dry run changes nothing. Describe calls validate MaxResults against the
// documented range and page with opaque NextTokens
// (InvalidNextToken for a bad one); Filter.N supports the names listed next
// to each operation plus tag:KEY, tag-key and tag-value, with * and ?
// wildcards; an unknown filter name is InvalidParameterValue.
//
// Instance types and prices come from internal/catalog: DescribeInstanceTypes
// is derived from catalog.Facts so that Karpenter's formulas give the
// catalog's values back (pods = MaxENIs*(IPv4PerENI-1)+2, memory, GPUs,
// Neuron, EFA, NVMe), on-demand prices are the catalog's and spot prices are
// catalog.Load's for each zone. Types without a price have no offerings.
//
// # Instances
//
// Launched instances start pending and follow the clock (Config.Clock):
// pending -> running after Config.PendingDelay, stopping -> stopped,
// shutting-down -> terminated after Config.ShuttingDownDelay; terminated
// instances are described for Config.TerminatedRetention, then vanish.
// Transitions happen on every request, on Advance and, when Run is
// running, every Config.TickInterval. A running instance holds one address
// of its subnet (AvailableIpAddressCount falls by one) until it is
// terminated. Launched instances carry the tags of the launch template's
// and CreateFleet's instance TagSpecifications plus EC2's
// aws:ec2launchtemplate:id, aws:ec2launchtemplate:version and
// aws:ec2:fleet-id.
//
// # Go API for the composition layer
//
//   - Seeding: AddVPC, AddSubnet, AddSecurityGroup, AddImage,
//     AddCapacityReservation (On-Demand Capacity Reservations and Capacity
//     Blocks); PublishImage and DeprecateImage at run time (drift tests);
//     VPCs, Subnets, SecurityGroups, Images, LaunchTemplates,
//     CapacityReservations read the state back.
//   - Observing: Instances, Instance, OnInstanceChange (called after every
//     launch, state change and tag change, in order).
//   - Faults: AddCapacityReservation and SetCapacityReservationAvailable
//     (another client taking a reservation's slots), SetInsufficientCapacity,
//     SetFleetError (CreateFleet reports a pool with
//     MaxSpotInstanceCountExceeded, VcpuLimitExceeded, MaxFleetCountExceeded,
//     UnfulfillableCapacity or UnauthorizedOperation in its errorSet),
//     SetThrottle (a seeded fraction of requests fail with
//     RequestLimitExceeded), SetDescribeLag (eventual consistency of
//     DescribeInstances), StopInstance and TerminateInstance behind the
//     client's back.
//   - Clients: awsclient.BufferRequestBodies (internal/awsclient) wraps the
//     transport of SDK clients that talk to a local endpoint (see its
//     comment: smithy-go closes request bodies early, which breaks large
//     responses from a fast server).
//
// # Not modelled
//
// RunInstances, launch template versions, fleets of type request/maintain,
// capacity reservation operations other than DescribeCapacityReservations
// (Create/Modify/Cancel over the wire, purchasing Capacity Blocks; blocks
// are seeded and end by their EndDate), placement groups, instance status
// checks, DescribeAvailabilityZones, security group rules, IPv6, public
// IPs, EBS volumes, spot price changes over time, per-account limits (vCPU,
// spot instance count: SetFleetError reports them only when told), IAM
// authorisation (UnauthorizedOperation only through SetFleetError), and
// idempotency by ClientToken for any operation but CreateFleet.
package ec2
