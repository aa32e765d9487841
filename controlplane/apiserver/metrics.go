package apiserver

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are kube-apiserver's request metrics (same names).
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, resource, subresource and HTTP response code.",
		}, []string{"verb", "resource", "subresource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, resource and subresource.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "resource", "subresource"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.total, m.duration} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *requestMetrics) observe(verb, resource, subresource string, code int, d time.Duration) {
	if verb == "" {
		verb = "unknown"
	}
	m.total.WithLabelValues(verb, resource, subresource, strconv.Itoa(code)).Inc()
	if verb != "watch" {
		m.duration.WithLabelValues(verb, resource, subresource).Observe(d.Seconds())
	}
}
