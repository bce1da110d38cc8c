package operator

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProfilingIsServedOnlyWhenEnabled: --enable-profiling (ENABLE_PROFILING)
// adds Go's pprof handlers beside /metrics; without it they are not found.
func TestProfilingIsServedOnlyWhenEnabled(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		s := &metricsServer{gatherers: prometheus.Gatherers{prometheus.NewRegistry()}, profiling: profiling}
		h := s.handler()
		for path, wantWhenEnabled := range map[string]int{"/metrics": http.StatusOK, "/debug/pprof/heap": http.StatusOK, "/debug/pprof/": http.StatusOK} {
			want := wantWhenEnabled
			if !profiling && path != "/metrics" {
				want = http.StatusNotFound
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("profiling %v: GET %s = %d, want %d", profiling, path, rec.Code, want)
			}
		}
	}
}

// failingCollector sends one metric that cannot be encoded.
type failingCollector struct{ desc *prometheus.Desc }

func (f failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }
func (f failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.desc, errors.New("broken"))
}

// TestAFailingCollectorLeavesTheOthersServed: one collector's error costs
// only its own series; /metrics still answers 200 with every other metric.
func TestAFailingCollectorLeavesTheOthersServed(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(failingCollector{prometheus.NewDesc("test_broken", "A collector that fails.", nil, nil)})
	up := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_up", Help: "A healthy gauge."})
	up.Set(1)
	reg.MustRegister(up)
	rec := httptest.NewRecorder()
	(&metricsServer{gatherers: prometheus.Gatherers{reg}}).handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "test_up 1") {
		t.Errorf("GET /metrics = %d with body %q, want 200 with test_up", rec.Code, rec.Body.String())
	}
}
