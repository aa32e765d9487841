package probes

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values of prober_probe_total's result label, as the kubelet's.
const (
	metricSuccessful = "successful"
	metricFailed     = "failed"
	metricUnknown    = "unknown"
)

// metrics are the kubelet's prober metrics.
type metrics struct {
	// total is prober_probe_total{probe_type,result,container,pod,namespace,pod_uid}.
	total *prometheus.CounterVec
	// duration is prober_probe_duration_seconds{probe_type,container,pod,namespace}.
	duration *prometheus.HistogramVec
}

// newMetrics creates the metrics and registers them on reg (if not nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober",
			Name:      "probe_total",
			Help:      "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober",
			Name:      "probe_duration_seconds",
			Help:      "Duration in seconds for a probe response.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.total, m.duration} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("probes: prober metrics already registered on this registry (one Manager per registry): %w", err)
			}
			return nil, fmt.Errorf("probes: registering prober metrics: %w", err)
		}
	}
	return m, nil
}

// workerMetrics are one worker's series. As the kubelet's, a series
// appears when it is first counted.
type workerMetrics struct {
	parent *metrics
	labels [4]string // probe_type, container, pod, namespace
	podUID string
}

func (m *metrics) forWorker(probeType, container, pod, namespace, podUID string) *workerMetrics {
	return &workerMetrics{parent: m, labels: [4]string{probeType, container, pod, namespace}, podUID: podUID}
}

// count adds one probe with result (metricSuccessful, metricFailed, metricUnknown).
func (w *workerMetrics) count(result string) {
	l := w.labels
	w.parent.total.WithLabelValues(l[0], result, l[1], l[2], l[3], w.podUID).Inc()
}

// observe records a probe's duration.
func (w *workerMetrics) observe(seconds float64) {
	l := w.labels
	w.parent.duration.WithLabelValues(l[0], l[1], l[2], l[3]).Observe(seconds)
}

// delete drops the worker's series when it stops.
func (w *workerMetrics) delete() {
	l := w.labels
	for _, r := range []string{metricSuccessful, metricFailed, metricUnknown} {
		w.parent.total.DeleteLabelValues(l[0], r, l[1], l[2], l[3], w.podUID)
	}
	w.parent.duration.DeleteLabelValues(l[0], l[1], l[2], l[3])
}
