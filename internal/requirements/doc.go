// Package requirements is the label-requirement algebra Dovetail schedules
// with: the operators In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte and Lte
// over node label keys, their intersection, compatibility checks that explain
// themselves, minValues, and conversion from node selectors, node-affinity
// terms and NodePool requirements.
//
// A Requirement is the exact set of nodes a key admits: a finite or cofinite
// set of values, optional integer bounds, and whether a node without the
// label qualifies. That keeps Kubernetes semantics (NotIn and DoesNotExist
// match nodes without the label; In, Exists, Gt and Lt do not) that a plain
// value set cannot express, and it makes intersection a closed, commutative,
// idempotent operation, which the fuzz tests check.
//
// Values are immutable: every operation returns a new value and shares no
// mutable state with its inputs. The package is pure (no I/O, no clock, no
// globals) so that the scheduling simulator can use it freely.
package requirements
