package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// health is kube-proxy's health (pkg/proxy/healthcheck ProxyHealthServer):
// healthy unless a change has waited for a sync longer than timeout; the
// proxy is healthy while it starts and whenever it is in sync.
type health struct {
	now     func() time.Time
	timeout time.Duration

	mu            sync.Mutex
	lastUpdated   time.Time // the last successful sync
	oldestPending time.Time // the oldest change not synced yet; zero: none
}

// queued records a change waiting for a sync.
func (h *health) queued() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.oldestPending.IsZero() {
		h.oldestPending = h.now()
	}
}

// updated records a successful sync of every change queued before it
// started.
func (h *health) updated(started time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastUpdated = h.now()
	if !h.oldestPending.After(started) {
		h.oldestPending = time.Time{}
	}
}

// healthy reports the health at now and the last sync.
func (h *health) healthy() (bool, time.Time, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	return h.oldestPending.IsZero() || now.Sub(h.oldestPending) < h.timeout, h.lastUpdated, now
}

// healthResponse is the JSON of /healthz and /livez, as kube-proxy's.
type healthResponse struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	NodeEligible *bool     `json:"nodeEligible,omitempty"`
}

// HealthHandler serves kube-proxy's /healthz and /livez: 200 while the
// proxy is healthy, else 503 (with lastUpdated "now" when healthy, as
// kube-proxy keeps for old clients). /healthz also says whether the node is
// eligible for load-balancer traffic: berth's agents always are.
func (p *Proxier) HealthHandler() http.Handler {
	serve := func(w http.ResponseWriter, counter *prometheus.CounterVec, withNode bool) {
		ok, last, now := p.health.healthy()
		resp := healthResponse{LastUpdated: last, CurrentTime: now}
		if withNode {
			eligible := true
			resp.NodeEligible = &eligible
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		code := http.StatusOK
		if !ok {
			code = http.StatusServiceUnavailable
		} else {
			resp.LastUpdated = now
		}
		counter.WithLabelValues(strconv.Itoa(code)).Inc()
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(resp)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		serve(w, p.metrics.healthz, true)
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		serve(w, p.metrics.livez, false)
	})
	return mux
}
