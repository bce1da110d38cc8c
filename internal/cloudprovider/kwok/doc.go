// Package kwok is the cloud provider whose instances are Node objects that
// kwok plays the kubelet of: Dovetail runs end to end on a laptop or in CI,
// against a real API server, with EC2-shaped nodes and prices from the
// embedded catalog (internal/catalog, converted by ../ec2types).
//
// # Instance types
//
// Options.InstanceTypes picks the set offered to every NodePool. The default,
// InstanceTypesEC2, is the EC2 catalog. InstanceTypesKarpenterKWOK is the set
// Karpenter's kwok provider generates (c-16x-amd64-linux and the like, in
// zones test-zone-a to test-zone-d, labelled karpenter.kwok.sh/instance-*),
// so that NodePools and pods written for that provider launch unchanged.
//
// # Instances
//
// Create picks, among the instance types a NodeClaim allows whose
// allocatable fits its requests, the cheapest available offering (instance
// type, zone, capacity type); equal prices go to the type, zone and capacity
// type that sort first. The instance is a Node named after the claim, so a
// second Create for the same claim finds it instead of launching another.
// Its provider ID is "kwok://<name>"; it carries the kwok annotation, the
// instance type's labels (every karpenter.k8s.aws/instance-* label, arch,
// OS, region), the offering's zone and capacity type, the claim's labels,
// the hostname, the kubelet's beta.kubernetes.io/os and arch, and
// PartitionLabelKey; the karpenter.sh/unregistered:NoExecute
// taint until the core registers it, plus the claim's taints and startup
// taints; the type's capacity and allocatable; and an owner reference to a
// stored claim. Get, List and Delete work on the instances of the provider's
// partition; a Node being deleted counts as gone.
//
// # Registration delay, restart-safe
//
// A real instance boots for a while before its kubelet creates its Node. The
// simulated boot time is the KWOKNodeClass's spec.nodeRegistrationDelay, or
// Options.RegistrationDelay. With no delay Create writes the Node at once.
// With a delay, Create writes nothing: it returns the claim with its
// provider ID, labels and capacity as usual, plus RegisterAfterLabelKey (the
// time the Node appears). The core stores that claim, which makes the claim
// the durable record of the booting instance: Get and List report it from
// the claim, and the RegistrationController, watching claims, creates the
// Node (the same Node Create would have written) when the time comes. A
// controller that restarts, or another replica, reads the time from the
// claim and finishes the registration; the injected clock drives it, so
// tests need not sleep. A claim that is being deleted, or whose Node the
// core has registered, never gets a (new) Node.
//
// Why not write the Node at once and hand it to kwok later by adding the
// kwok annotation: kwok (v0.8, with node leases as the local control plane
// runs it) only takes over Nodes that are created annotated; a Node
// annotated by an update stays unmanaged and never becomes Ready.
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
