// Package simulator decides where pending pods go: onto existing and in-flight
// nodes, or onto new NodeClaims of the cheapest instance types that fit, by
// simulating the kube-scheduler against every instance type of every NodePool.
// Provisioning calls it to decide what to launch; consolidation calls it many
// times per decision to ask whether the pods of some nodes fit elsewhere.
//
// It is pure: a Snapshot (a plain value) goes in, a Plan comes out, and the
// same snapshot always gives the same plan. There is no API client, no clock,
// no goroutine and no global state. New indexes a snapshot once into a Model
// (interned labels, instance-type bitsets, resource vectors, topology counts);
// Model.Solve runs one simulation against it without modifying it, so a Model
// may serve many what-if solves, concurrently.
//
// See docs/design/simulator.md for the data structures, the placement order
// and the preference-relaxation order.
package simulator
