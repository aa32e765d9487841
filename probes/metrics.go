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

// workerMetrics are one worker's series, resolved once.
type workerMetrics struct {
	parent                      *metrics
	labels                      [4]string // probe_type, container, pod, namespace
	podUID                      string
	successful, failed, unknown prometheus.Counter
	duration                    prometheus.Observer
}

func (m *metrics) forWorker(probeType, container, pod, namespace, podUID string) *workerMetrics {
	return &workerMetrics{
		parent:     m,
		labels:     [4]string{probeType, container, pod, namespace},
		podUID:     podUID,
		successful: m.total.WithLabelValues(probeType, metricSuccessful, container, pod, namespace, podUID),
		failed:     m.total.WithLabelValues(probeType, metricFailed, container, pod, namespace, podUID),
		unknown:    m.total.WithLabelValues(probeType, metricUnknown, container, pod, namespace, podUID),
		duration:   m.duration.WithLabelValues(probeType, container, pod, namespace),
	}
}

// delete drops the worker's series when it stops.
func (w *workerMetrics) delete() {
	l := w.labels
	for _, r := range []string{metricSuccessful, metricFailed, metricUnknown} {
		w.parent.total.DeleteLabelValues(l[0], r, l[1], l[2], l[3], w.podUID)
	}
	w.parent.duration.DeleteLabelValues(l[0], l[1], l[2], l[3])
}
