package operator

import (
	"net/http"
	"net/http/httptest"
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
