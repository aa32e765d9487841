package proxy

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// ipFamily is the ip_family label of the metrics: the proxier programs IPv4.
const ipFamily = "IPv4"

// metrics are kube-proxy's (pkg/proxy/metrics), same names, labels and
// buckets, so its dashboards and alerts work on the agent's endpoint.
type metrics struct {
	syncDuration, fullSyncDuration, partialSyncDuration *prometheus.HistogramVec
	lastSync, lastQueued                                *prometheus.GaugeVec
	programming                                         *prometheus.HistogramVec
	endpointChanges, serviceChanges                     prometheus.Counter
	noLocalEndpoints                                    *prometheus.GaugeVec
	syncFailures                                        *prometheus.CounterVec
	healthz, livez                                      *prometheus.CounterVec
}

func newMetrics() *metrics {
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubeproxy", Name: name, Help: help, Buckets: buckets}, []string{"ip_family"})
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubeproxy", Name: name, Help: help}, labels)
	}
	syncBuckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	// 0.25 s, 0.5 s, then 1 s steps to 59 s, 5 s steps to 115 s, 30 s to 5 min.
	programming := []float64{0.25, 0.5}
	for s := 1.0; s <= 59; s++ {
		programming = append(programming, s)
	}
	for s := 60.0; s <= 115; s += 5 {
		programming = append(programming, s)
	}
	for s := 120.0; s <= 300; s += 30 {
		programming = append(programming, s)
	}
	return &metrics{
		syncDuration:        hist("sync_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds", syncBuckets),
		fullSyncDuration:    hist("sync_full_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds for full resyncs", syncBuckets),
		partialSyncDuration: hist("sync_partial_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds for partial resyncs", syncBuckets),
		lastSync:            gauge("sync_proxy_rules_last_timestamp_seconds", "The last time proxy rules were successfully synced", "ip_family"),
		lastQueued:          gauge("sync_proxy_rules_last_queued_timestamp_seconds", "The last time a sync of proxy rules was queued", "ip_family"),
		programming:         hist("network_programming_duration_seconds", "In Cluster Network Programming Latency in seconds", programming),
		endpointChanges: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubeproxy", Name: "sync_proxy_rules_endpoint_changes_total",
			Help: "Cumulative proxy rules Endpoint changes"}),
		serviceChanges: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubeproxy", Name: "sync_proxy_rules_service_changes_total",
			Help: "Cumulative proxy rules Service changes"}),
		noLocalEndpoints: gauge("sync_proxy_rules_no_local_endpoints_total",
			"Number of services with a Local traffic policy and no endpoints", "traffic_policy", "ip_family"),
		syncFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubeproxy", Name: "sync_proxy_rules_nftables_sync_failures_total",
			Help: "Cumulative proxy nftables sync failures"}, []string{"ip_family"}),
		healthz: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubeproxy", Name: "proxy_healthz_total",
			Help: "Cumulative proxy healthz HTTP status"}, []string{"code"}),
		livez: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubeproxy", Name: "proxy_livez_total",
			Help: "Cumulative proxy livez HTTP status"}, []string{"code"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.syncDuration, m.fullSyncDuration, m.partialSyncDuration, m.lastSync, m.lastQueued,
		m.programming, m.endpointChanges, m.serviceChanges, m.noLocalEndpoints, m.syncFailures, m.healthz, m.livez} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
	}
	return nil
}
