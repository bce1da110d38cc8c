// Package instance launches, describes and terminates the EC2 instances
// behind NodeClaims: one CreateFleet call (type instant) per launch,
// DescribeInstances for Get and List, TerminateInstances for Delete.
//
// # Launch
//
// The caller resolves everything a launch needs (the launch templates with
// the instance types each serves, the subnet per zone, the capacity type)
// and Launch turns it into one CreateFleet request, as Karpenter's AWS
// provider does: one LaunchTemplateConfig per template, one override per
// (instance type, zone) offering the claim allows, priced by the offering
// (Priority), price-capacity-optimized for spot and lowest-price for
// on-demand (capacity-optimized-prioritized and prioritized when a
// NodeOverlay changed the prices, so that EC2 follows the overlaid order),
// TotalTargetCapacity 1. Tags go on the instance, its volumes and
// the fleet. Dovetail also tags the instance with karpenter.sh/nodeclaim at
// launch (Karpenter adds it only after registration), so that a launch
// retried after a crash finds the instance the first attempt made instead of
// making a second one, and garbage collection can name the claim an
// instance was made for.
//
// Every per-override error that means "no capacity here" is reported to the
// caller's OnUnavailable callback (the unavailable-offerings cache), so the
// next simulation skips that offering. When no instance comes back, the
// launch fails with an InsufficientCapacityError if every error was of that
// kind, and with a CreateError carrying Karpenter's condition reason
// otherwise.
//
// # Eventual consistency
//
// EC2 may not describe an instance for a while after CreateFleet returned
// it. Provider remembers the instances it launched for ConsistencyWindow
// and, within it, answers "not found" from DescribeInstances or
// TerminateInstances with a retryable error instead of reporting the
// instance gone, so a just-launched instance is neither taken for dead nor
// left running.
package instance
