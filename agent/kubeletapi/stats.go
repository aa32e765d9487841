package kubeletapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"berth/agent/stats"
)

// statsRoutes registers the kubelet's resource-usage paths when Config.Stats
// is set:
//
//	GET /stats/summary       kubelet Summary API (stats/v1alpha1), only_cpu_and_memory
//	GET /metrics/resource    what metrics-server scrapes
//	GET /metrics/cadvisor    cAdvisor's container metrics
func (s *Server) statsRoutes() {
	if s.cfg.Stats == nil {
		return
	}
	s.mux.HandleFunc("GET /stats/summary", s.summary)
	s.mux.Handle("GET /metrics/resource", gathererHandler(stats.NewResourceCollector(s.cfg.Stats)))
	s.mux.Handle("GET /metrics/cadvisor", gathererHandler(stats.NewCadvisorCollector(s.cfg.Stats)))
}

// gathererHandler serves one collector in its own registry.
func gathererHandler(c prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	onlyCPUAndMemory := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		var err error
		if onlyCPUAndMemory, err = strconv.ParseBool(v); err != nil {
			http.Error(w, "Invalid value for only_cpu_and_memory: "+v, http.StatusBadRequest)
			return
		}
	}
	snap, err := s.cfg.Stats.Latest()
	if snap == nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	summary := snap.Summary
	if onlyCPUAndMemory {
		summary = stats.CPUAndMemory(summary)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&summary); err != nil {
		s.cfg.Logger.Debug("writing /stats/summary failed", "err", err)
	}
}
