// Package testing holds fluent builders for the objects Dovetail's tests
// make over and over (pods, NodePools, instance types, snapshot nodes,
// daemonsets, volumes), in the style of kueue's wrappers:
// MakePod("web").Req("cpu", "1").ZoneSpread(1, app).Obj(). Import it as
// dtesting, so that it does not shadow the standard library's testing.
//
// Builders set deterministic defaults (namespace "default", a UID derived
// from namespace and name) and never panic on bad input except where the
// caller passes an unparsable quantity literal, which is a bug in the test.
package testing
