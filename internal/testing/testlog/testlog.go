// Package testlog gives tests a logger and a log writer that print to the
// test's log until the test ends and drop whatever arrives later.
// controller-runtime's manager logs from a shutdown goroutine it does not
// wait for, and testing panics on a Log after its test has completed; a
// late shutdown line must not crash the test binary.
package testlog

import (
	"io"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
)

// sink forwards to t until t's cleanups run.
type sink struct {
	mu     sync.Mutex
	t      *testing.T
	closed bool
}

// newSink returns a sink for t. When t has failed, its last line names
// the test: a failing end-to-end test prints thousands of controller log
// lines after its "--- FAIL" header, and CI keeps only the end of its output.
func newSink(t *testing.T) *sink {
	s := &sink{t: t}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.Failed() {
			t.Logf("%s FAILED: its failure messages are among the log lines above", t.Name())
		}
		s.closed = true
	})
	return s
}

// Helper is a no-op: the sink is not where a log line comes from.
func (s *sink) Helper() {}

// Log prints to the test log while the test runs.
func (s *sink) Log(args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.t.Log(args...)
	}
}

// Write prints p to the test log while the test runs.
func (s *sink) Write(p []byte) (int, error) {
	s.Log(string(p))
	return len(p), nil
}

// Logger returns a logr.Logger printing to t's log at up to verbosity.
func Logger(t *testing.T, verbosity int) logr.Logger {
	return testr.NewWithInterface(newSink(t), testr.Options{Verbosity: verbosity})
}

// Writer returns a writer (for a controller's log output) printing to t's log.
func Writer(t *testing.T) io.Writer { return newSink(t) }
