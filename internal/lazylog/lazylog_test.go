package lazylog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// counting wraps a sink and counts the WithValues calls that reach it.
type counting struct {
	logr.LogSink
	withValues *int
}

func (c counting) WithValues(kv ...any) logr.LogSink {
	*c.withValues++
	return counting{LogSink: c.LogSink.WithValues(kv...), withValues: c.withValues}
}

func (c counting) WithName(name string) logr.LogSink {
	return counting{LogSink: c.LogSink.WithName(name), withValues: c.withValues}
}

// newRecorded returns a lazy logger over funcr (verbosity 1), the lines it
// writes, and the number of WithValues calls that reached funcr.
func newRecorded() (logr.Logger, *[]string, *int) {
	var lines []string
	calls := 0
	base := funcr.New(func(prefix, args string) { lines = append(lines, strings.TrimSpace(prefix+" "+args)) }, funcr.Options{Verbosity: 1})
	return New(logr.New(counting{LogSink: base.GetSink(), withValues: &calls})), &lines, &calls
}

func TestLinesCarryTheirValues(t *testing.T) {
	cases := map[string]struct {
		write     func(logr.Logger)
		wantLines []string
		// wantCalls is how many WithValues reached the wrapped sink.
		wantCalls int
	}{
		"values never written are never applied": {
			write: func(l logr.Logger) {
				l.WithValues("controller", "lifecycle").WithValues("name", "a", "reconcileID", "1")
			},
			wantCalls: 0,
		},
		"a line carries every value, applied once": {
			write: func(l logr.Logger) {
				d := l.WithValues("controller", "lifecycle").WithValues("name", "a")
				d.Info("launched", "type", "m5.large")
				d.Info("registered")
			},
			wantLines: []string{
				`"level"=0 "msg"="launched" "controller"="lifecycle" "name"="a" "type"="m5.large"`,
				`"level"=0 "msg"="registered" "controller"="lifecycle" "name"="a"`,
			},
			wantCalls: 1,
		},
		"siblings do not share values": {
			write: func(l logr.Logger) {
				parent := l.WithValues("controller", "lifecycle")
				a, b := parent.WithValues("name", "a"), parent.WithValues("name", "b")
				b.Info("b")
				a.Info("a")
			},
			wantLines: []string{
				`"level"=0 "msg"="b" "controller"="lifecycle" "name"="b"`,
				`"level"=0 "msg"="a" "controller"="lifecycle" "name"="a"`,
			},
			wantCalls: 2,
		},
		"a name keeps the values given before it": {
			write: func(l logr.Logger) {
				l.WithValues("controller", "lifecycle").WithName("registration").WithValues("node", "n").Info("patched")
			},
			wantLines: []string{`registration "level"=0 "msg"="patched" "controller"="lifecycle" "node"="n"`},
			wantCalls: 2,
		},
		"a disabled level applies nothing": {
			write: func(l logr.Logger) {
				l.WithValues("name", "a").V(2).Info("too verbose")
			},
			wantCalls: 0,
		},
		"errors carry the values too": {
			write: func(l logr.Logger) {
				l.WithValues("name", "a").Error(errors.New("boom"), "failed")
			},
			wantLines: []string{`"msg"="failed" "error"="boom" "name"="a"`},
			wantCalls: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, lines, calls := newRecorded()
			tc.write(logger)
			if diff := cmp.Diff(tc.wantLines, *lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if *calls != tc.wantCalls {
				t.Errorf("%d WithValues reached the wrapped sink, want %d", *calls, tc.wantCalls)
			}
		})
	}
}

// TestOddListsAsWithout: a key/value list of odd length is handed to the
// wrapped sink when it is given, so the lines read as the wrapped sink
// alone writes them: zapr reports the odd list and keeps the values given
// after it apart from it.
func TestOddListsAsWithout(t *testing.T) {
	write := func(l logr.Logger) {
		l.WithValues("controller", "lifecycle").WithValues("orphan").WithValues("name", "a").Info("line")
	}
	lines := func(wrap func(logr.Logger) logr.Logger) []map[string]any {
		var buf bytes.Buffer
		write(wrap(zap.New(zap.JSONEncoder(), zap.WriteTo(&buf), zap.UseDevMode(false))))
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			entry := map[string]any{}
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			delete(entry, "ts")
			delete(entry, "stacktrace") // the wrapper's frames
			out = append(out, entry)
		}
		return out
	}
	direct := lines(func(l logr.Logger) logr.Logger { return l })
	if len(direct) != 2 {
		t.Fatalf("zapr wrote %d lines, want the odd list's report and the line: %v", len(direct), direct)
	}
	if diff := cmp.Diff(direct, lines(New)); diff != "" {
		t.Errorf("lines (-without +with the wrapper):\n%s", diff)
	}
}

func TestNewKeepsTheVerbosity(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	logger := New(base.V(1))
	logger.Info("at one")
	logger.V(1).Info("at two")
	if diff := cmp.Diff([]string{`"level"=1 "msg"="at one"`}, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestNewWrapsOnce(t *testing.T) {
	logger, _, _ := newRecorded()
	if again := New(logger); again.GetSink() != logger.GetSink() {
		t.Error("New wrapped a lazy logger again")
	}
	if discard := New(logr.Discard()); discard.GetSink() != nil {
		t.Error("New wrapped the discarding logger")
	}
}

// TestConcurrentLinesApplyValuesOnce writes from several goroutines through
// one derived logger, as reconcile workers sharing a controller's logger do
// (run with -race).
func TestConcurrentLinesApplyValuesOnce(t *testing.T) {
	var mu sync.Mutex
	lines, calls := 0, 0
	base := funcr.New(func(string, string) { mu.Lock(); lines++; mu.Unlock() }, funcr.Options{})
	logger := New(logr.New(counting{LogSink: base.GetSink(), withValues: &calls})).WithValues("controller", "lifecycle")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { logger.Info("line", "worker", i) })
	}
	wg.Wait()
	if lines != 8 || calls != 1 {
		t.Errorf("%d lines and %d WithValues reached the wrapped sink, want 8 and 1", lines, calls)
	}
}

// BenchmarkReconcileLogger derives the logger controller-runtime gives each
// reconcile (the controller's values, the object's, the reconcile ID) from
// the operator's JSON zap logger, and writes nothing with it, as most
// reconciles do; then the same with one line written.
func BenchmarkReconcileLogger(b *testing.B) {
	zapLogger := zap.New(zap.JSONEncoder(), zap.WriteTo(io.Discard), zap.UseDevMode(false))
	for _, bc := range []struct {
		name   string
		logger logr.Logger
	}{{"zap", zapLogger}, {"lazy", New(zapLogger)}} {
		controllerLogger := bc.logger.WithValues("controller", "nodeclaim.lifecycle", "controllerGroup", "karpenter.sh", "controllerKind", "NodeClaim")
		derive := func() logr.Logger {
			return controllerLogger.WithValues("NodeClaim", map[string]string{"name": "default-abcde"}, "namespace", "", "name", "default-abcde").
				WithValues("reconcileID", "0b8f3c1e-5a7d-4c2b-9e1f-6d4a2b8c7e90")
		}
		b.Run(bc.name+"/no-line", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = derive()
			}
		})
		b.Run(bc.name+"/one-line", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				derive().Info("Registered NodeClaim", "Node", "default-abcde")
			}
		})
	}
}
