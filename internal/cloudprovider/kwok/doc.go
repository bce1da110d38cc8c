// Package kwok is the cloud provider whose instances are Node objects that
// kwok plays the kubelet of: Dovetail runs end to end on a laptop or in CI,
// against a real API server, with EC2-shaped nodes and prices from the
// embedded catalog (internal/catalog, converted by ../ec2types).
//
// # Instances
//
// Create picks, among the instance types a NodeClaim allows whose
// allocatable fits its requests, the cheapest available offering (instance
// type, zone, capacity type); equal prices go to the type, zone and capacity
// type that sort first. The instance is a Node named after the claim, so a
// second Create for the same claim finds it instead of launching another.
// Its provider ID is "kwok://<name>"; it carries the instance type's labels
// (every karpenter.k8s.aws/instance-* label, arch, OS, region), the
// offering's zone and capacity type, the claim's labels, the hostname and
// PartitionLabelKey; the karpenter.sh/unregistered:NoExecute taint until the
// core registers it, plus the claim's taints and startup taints; and the
// type's capacity and allocatable. Get, List and Delete work on the Nodes of
// the provider's partition; a Node being deleted counts as gone.
//
// # Registration delay, restart-safe
//
// A real instance boots for a while before its kubelet is Ready. The
// simulated boot time is the KWOKNodeClass's spec.nodeRegistrationDelay, or
// Options.RegistrationDelay. kwok only manages Nodes annotated
// kwok.x-k8s.io/node=fake, so:
//
//   - with no delay, Create writes the Node with that annotation and kwok
//     makes it Ready at once;
//   - with a delay, Create writes the Node without it, with the time it may
//     register in RegisterAfterAnnotationKey and a Ready=False condition, as
//     a booting kubelet reports. The RegistrationController requeues the
//     Node until that time, then adds the kwok annotation; kwok makes it
//     Ready. While Ready is False, the node lifecycle controller keeps the
//     node.kubernetes.io/not-ready:NoSchedule taint that keeps pods off.
//
// The time lives on the Node, not in a goroutine or in memory, so a
// controller that restarts (or another replica) finishes the registration.
// The injected clock drives it, so tests need not sleep.
//
// # Insufficient capacity
//
// Options.InsufficientCapacity (see FailOfferings) makes chosen offerings
// fail as if EC2 had no capacity. Create then tries the next cheapest, like
// a fleet request, and remembers each failed offering for
// UnavailableOfferingTTL (3 minutes, by the injected clock): GetInstanceTypes
// reports it unavailable, with the type's zone and capacity-type
// requirements narrowed to what is left. Create fails with an
// InsufficientCapacityError when nothing is left.
//
// # NodeClass
//
// Create launches only from a KWOKNodeClass that exists and is Ready, and
// returns a NodeClassNotReadyError otherwise. The NodeClassController sets
// that condition: True when the spec is valid, False with a reason otherwise.
//
// Both controllers have the shape of the core's: Name, Register(ctx, mgr)
// and a typed Reconcile, so the composition root registers them next to the
// others. The package keeps no package-level state and has no init().
package kwok
