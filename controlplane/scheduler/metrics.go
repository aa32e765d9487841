package scheduler

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the result label.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// metrics are the scheduler's Prometheus metrics, named as kube-scheduler's.
type metrics struct {
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	pending         *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
		}, []string{"result", "profile"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "scheduler", Name: "pending_pods",
			Help: "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods.",
		}, []string{"queue"}),
	}
	var err error
	if m.attempts, err = register(reg, m.attempts); err != nil {
		return nil, err
	}
	if m.attemptDuration, err = register(reg, m.attemptDuration); err != nil {
		return nil, err
	}
	if m.pending, err = register(reg, m.pending); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the same-described collector already
// registered (a scheduler rebuilt for a new leadership term keeps counting
// in the same metrics).
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

func (m *metrics) setPending(active, backoff, unschedulable int) {
	m.pending.WithLabelValues("active").Set(float64(active))
	m.pending.WithLabelValues("backoff").Set(float64(backoff))
	m.pending.WithLabelValues("unschedulable").Set(float64(unschedulable))
}
