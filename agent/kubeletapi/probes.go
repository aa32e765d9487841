package kubeletapi

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// probeMetrics serves /metrics/probes as the kubelet: the prober's series
// (prober_probe_total, prober_probe_duration_seconds) of Config.Metrics.
func (s *Server) probeMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		http.NotFound(w, r)
		return
	}
	only := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := s.cfg.Metrics.Gather()
		out := fams[:0]
		for _, f := range fams {
			if strings.HasPrefix(f.GetName(), "prober_") {
				out = append(out, f)
			}
		}
		return out, err
	})
	promhttp.HandlerFor(only, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}
