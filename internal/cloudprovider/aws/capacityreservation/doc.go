// Package capacityreservation resolves an EC2NodeClass's
// capacityReservationSelectorTerms into status.capacityReservations through
// DescribeCapacityReservations, and keeps, between resolutions, how many
// more instances each reservation takes.
//
// EC2 is the source of truth for the counts, but it is asked only once a
// refresh interval, while launches and terminations happen in between. So
// the provider counts a launch into a reservation down at once (MarkLaunched),
// counts a termination back up (MarkTerminated), and drops a reservation to
// zero when EC2 refused a launch into it (MarkUnavailable); the next
// DescribeCapacityReservations replaces the counts. Each change bumps
// SeqNum, which the instance-type provider keys its cache on, so that the
// next simulation sees reserved offerings appear and disappear.
//
// ExpirationController deletes the NodeClaims of a capacity block from
// ExpirationWindow (40 minutes) before its end time, so that their nodes
// are drained before EC2 reclaims the instances.
package capacityreservation
