// Package unavailable is the AWS provider's unavailable-offerings cache: the
// (instance type, zone, capacity type) offerings, and whole capacity types,
// that EC2 recently refused to launch, for example with
// InsufficientInstanceCapacity.
//
// Why: retrying an offering that just failed wastes a launch and usually fails
// again, so the provider reports it unavailable for TTL (3 minutes, as
// Karpenter does) and the scheduler
// picks another. The instance-type provider caches its results; every mark and
// every expiry bumps SeqNum, which is part of that cache's key, so a change of
// availability is seen at once.
//
// Time comes from an injected clock and entries expire lazily when read, so
// there is no janitor goroutine and tests step a fake clock. A Cache is safe
// for concurrent use.
package unavailable
