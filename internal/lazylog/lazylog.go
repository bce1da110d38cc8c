// Package lazylog defers a logger's WithValues until the logger writes.
//
// controller-runtime derives a logger for every reconcile (the controller,
// the object's name and namespace, the reconcile ID), and zap encodes those
// values into a fresh buffer at once, although most reconciles never log a
// line. In a 10,000-pod scale-out that encoding was a ninth of everything
// the controller allocated. A Sink keeps the values as they were given and
// hands them to the underlying sink once per derived logger: when it first
// writes a line at an enabled level, or when a name or call depth is added
// to it. Lines read as they would without it. A key/value list of odd
// length is handed over at once, so that it spoils only its own values, as
// it would have.
//
// The wrapper does not pass on the optional interfaces of the sink it
// wraps (logr.SlogSink, zapr's Underlier): nothing in Dovetail uses them.
package lazylog

import (
	"sync"

	"github.com/go-logr/logr"
)

// New returns logger with its sink wrapped so that WithValues is deferred.
// The logger's sink is already initialised (logr.New did it); the wrapper
// adds one frame between the caller and that sink, which a sink that
// reports callers is told through WithCallDepth.
func New(logger logr.Logger) logr.Logger {
	base := logger.GetSink()
	if _, ok := base.(*Sink); ok || base == nil {
		return logger
	}
	if withDepth, ok := base.(logr.CallDepthLogSink); ok {
		base = withDepth.WithCallDepth(1)
	}
	return logr.New(&Sink{base: base}).V(logger.GetV())
}

// Sink is a logr.LogSink that records the values given to WithValues and
// applies them to the sink it wraps on the first line written. The copies
// of one derived logger share its *Sink (logr copies the Logger, not the
// sink), so the values are applied once however many lines it writes.
type Sink struct {
	// base is the wrapped sink, pending the values not applied to it yet.
	base    logr.LogSink
	pending []any
	// once guards resolved, base with the pending values applied.
	once     sync.Once
	resolved logr.LogSink
}

// sink returns the wrapped sink with the pending values applied.
func (s *Sink) sink() logr.LogSink {
	if len(s.pending) == 0 {
		return s.base
	}
	s.once.Do(func() { s.resolved = s.base.WithValues(s.pending...) })
	return s.resolved
}

// Init does nothing: the wrapped sink was initialised when its logger was
// made.
func (s *Sink) Init(logr.RuntimeInfo) {}

// Enabled reports whether the wrapped sink writes at level; the pending
// values do not change that, so they are not applied.
func (s *Sink) Enabled(level int) bool { return s.base.Enabled(level) }

// Info writes a line through the wrapped sink, with the pending values.
func (s *Sink) Info(level int, msg string, keysAndValues ...any) {
	s.sink().Info(level, msg, keysAndValues...)
}

// Error writes an error line through the wrapped sink, with the pending
// values.
func (s *Sink) Error(err error, msg string, keysAndValues ...any) {
	s.sink().Error(err, msg, keysAndValues...)
}

// WithValues returns a sink with more values pending; nothing is encoded.
// An odd-length list is handed to the wrapped sink at once, which reports
// it and keeps it from pairing with the values given after it.
func (s *Sink) WithValues(keysAndValues ...any) logr.LogSink {
	if len(keysAndValues)%2 != 0 {
		return &Sink{base: s.sink().WithValues(keysAndValues...)}
	}
	// A fresh slice: siblings derived from one logger must not share the
	// tail that append would write into.
	next := make([]any, 0, len(s.pending)+len(keysAndValues))
	next = append(append(next, s.pending...), keysAndValues...)
	return &Sink{base: s.base, pending: next}
}

// WithName returns a sink whose lines carry the name as well. The pending
// values are applied first, so that the line reads as it would have
// without the wrapper.
func (s *Sink) WithName(name string) logr.LogSink {
	return &Sink{base: s.sink().WithName(name)}
}

// WithCallDepth returns a sink that reports callers depth frames further
// up, when the wrapped sink reports callers at all.
func (s *Sink) WithCallDepth(depth int) logr.LogSink {
	base := s.sink()
	if withDepth, ok := base.(logr.CallDepthLogSink); ok {
		base = withDepth.WithCallDepth(depth)
	}
	return &Sink{base: base}
}
