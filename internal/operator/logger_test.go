package operator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestLoggerWritesEveryLine: a burst of lines with the same message (one
// "Created NodeClaim" per claim of a large plan) is written whole, where a
// sampling logger keeps about a hundred a second.
func TestLoggerWritesEveryLine(t *testing.T) {
	var buf bytes.Buffer
	logger := NewLogger("info", "json", &buf)
	const lines = 1000
	for i := range lines {
		logger.Info("Created NodeClaim", "NodeClaim", klog.KRef("", "default-x"), "index", i)
	}
	got := 0
	scanner := bufio.NewScanner(&buf)
	for scanner.Scan() {
		var line struct {
			Level     string            `json:"level"`
			Msg       string            `json:"msg"`
			NodeClaim map[string]string `json:"NodeClaim"`
			Index     int               `json:"index"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", got+1, err, scanner.Text())
		}
		if line.Level != "info" || line.Msg != "Created NodeClaim" || line.NodeClaim["name"] != "default-x" || line.Index != got {
			t.Fatalf("line %d = %s, want the %dth Created NodeClaim of default-x at info", got+1, scanner.Text(), got)
		}
		got++
	}
	if got != lines {
		t.Errorf("%d of %d lines written", got, lines)
	}
}

// TestLoggerLevels: the level flag decides which verbosities are written,
// and errors carry their message.
func TestLoggerLevels(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		want          []string
		dropped       []string
	}{
		{level: "info", format: "json", want: []string{`"msg":"info line"`, `"msg":"error line"`, `"error":"boom"`}, dropped: []string{"debug line"}},
		{level: "debug", format: "json", want: []string{`"msg":"debug line"`, `"msg":"info line"`, `"msg":"error line"`}},
		{level: "error", format: "json", want: []string{`"msg":"error line"`}, dropped: []string{"debug line", "info line"}},
		{level: "info", format: "console", want: []string{"\tinfo line", "\terror line\t", "boom"}, dropped: []string{"debug line"}},
	} {
		t.Run(tc.level+"/"+tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			logger := NewLogger(tc.level, tc.format, &buf)
			logger.V(1).Info("debug line")
			logger.Info("info line")
			logger.Error(errors.New("boom"), "error line")
			out := buf.String()
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, dropped := range tc.dropped {
				if strings.Contains(out, dropped) {
					t.Errorf("output has %q, which level %s drops:\n%s", dropped, tc.level, out)
				}
			}
		})
	}
}
