// Package awse2e is the harness the end-to-end test packages that run the
// whole Dovetail controller with the AWS cloud provider share
// (test/e2e/aws, test/e2e/interruption): one full local control plane with
// the local AWS endpoint (internal/localaws) per package, behind a front
// that counts the endpoint's requests, and per test a controller of its
// own that, when the test ends, cleans up what the test created and waits
// until its nodes, claims and instances are gone.
//
// A package's TestMain calls Run once; each test then calls Begin on the
// Cluster for its Suite and builds its objects with the helpers here.
// Helpers take testing.TB and fail the test with t.Fatalf on any error.
// BeginProcess runs the test's controller as its own process instead, so
// that KillController can SIGKILL it; CallCounter.HoldNext lets one request
// reach the endpoint and holds its response back, which opens the window a
// kill must not leak through (EC2 launched, the claim not told).
//
// Set DOVETAIL_KEEP_CONTROLPLANE=true to keep the control plane's work
// directory (component logs, etcd data) after the run for debugging.
package awse2e
